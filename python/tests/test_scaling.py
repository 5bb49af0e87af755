"""The fp8 scalings' shape rules (hiercoll.scaling): plain Python, no torch, no library."""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from hiercoll import _lib  # noqa: E402
from hiercoll import scaling  # noqa: E402


class ScalingShapesTest(unittest.TestCase):
    def test_infer(self):
        m, n, k = 256, 520, 300  # ceil(k/128) = 3, ceil(n/128) = 5
        self.assertEqual(scaling.infer(m, n, k, (1,), (1,)), "tensor")
        self.assertEqual(scaling.infer(m, n, k, (), (1, 1)), "tensor")
        self.assertEqual(scaling.infer(m, n, k, (m, 1), (1, n)), "row")
        self.assertEqual(scaling.infer(m, n, k, (m,), (n,)), "row")
        self.assertEqual(scaling.infer(m, n, k, (m, 3), (3, 5)), "block")
        for s in ("tensor", "row", "block"):
            self.assertEqual(scaling.infer(m, n, k, *scaling.expected_shapes(s, m, n, k)), s)

    def test_shapes_that_fit_nothing_name_what_fits(self):
        for sa, sb in (((256, 2), (3, 5)), ((256, 3), (5, 3)), ((1, 256), (1, 520)), ((256, 1), (520, 1))):
            with self.assertRaises(ValueError) as cm:
                scaling.infer(256, 520, 300, sa, sb)
            msg = str(cm.exception)
            self.assertIn(f"scale_a {list(sa)} and scale_b {list(sb)}", msg)
            self.assertIn("block: scale_a [256, 3] and scale_b [3, 5]", msg)
            self.assertIn("row: scale_a [256, 1] and scale_b [1, 520]", msg)

    def test_codes_are_the_headers(self):
        self.assertEqual(scaling.CODES, {"tensor": _lib.HC_SCALE_TENSOR, "row": _lib.HC_SCALE_ROW,
                                         "block": _lib.HC_SCALE_BLOCK})
        header = (pathlib.Path(__file__).resolve().parents[2] / "capi" / "hiercoll.h").read_text()
        for name in ("HC_SCALE_TENSOR", "HC_SCALE_ROW", "HC_SCALE_BLOCK"):
            self.assertIn(f"#define {name} {getattr(_lib, name)}\n", header)
        self.assertIn(f"#define HC_ABI_VERSION {_lib.ABI_VERSION}\n", header)


if __name__ == "__main__":
    unittest.main()
