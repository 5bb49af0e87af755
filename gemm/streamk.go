package gemm

// The GEMM's stream-K schedule in Go, line for line the kernel's gm_range,
// gm_item_at and gm_gather's search (gemm.cu): the twin computes the
// last wave's tiles piece by piece as the CTAs do, and the tests check the
// schedule's promises (every k tile of every tile once, one finisher per
// tile, at most one partial piece per CTA and before its finishing one).

// gemmItem is a CTA's work item: walk tile t, its k tiles [kb, ke); final
// when it ends the tile (that CTA stores it).
type gemmItem struct {
	t, kb, ke int
	final     bool
}

// gemmRange is CTA c's stream-K range [a, e) of the sk·kt k tiles of the
// walk's last sk tiles.
func gemmRange(c, grid, sk, kt int) (a, e int64) {
	total := int64(sk) * int64(kt)
	return int64(c) * total / int64(grid), int64(c+1) * total / int64(grid)
}

// gemmItems is CTA b's work in order: its whole tiles, then its stream-K
// pieces, the partial one first.
func gemmItems(b, grid, tiles, sk, kt int) []gemmItem {
	var items []gemmItem
	dp := tiles - sk
	for t := b; t < dp; t += grid {
		items = append(items, gemmItem{t, 0, kt, true})
	}
	if sk == 0 {
		return items
	}
	a, e := gemmRange(b, grid, sk, kt)
	if a == e {
		return items
	}
	t0, k0 := int(a/int64(kt)), int(a%int64(kt))
	len0 := int(min(int64(kt-k0), e-a))
	first := gemmItem{dp + t0, k0, k0 + len0, k0+len0 == kt}
	if e-a > int64(kt-k0) {
		next := gemmItem{dp + t0 + 1, 0, int(e - int64(t0+1)*int64(kt)), false}
		return append(items, next, first)
	}
	return append(items, first)
}

// gemmPartials lists, from b−1 down, the CTAs whose partial pieces the
// finisher b of walk tile t adds.
func gemmPartials(b, grid, t, tiles, sk, kt int) []int {
	var cs []int
	start := int64(t-(tiles-sk)) * int64(kt)
	for c := b - 1; c >= 0; c-- {
		a, e := gemmRange(c, grid, sk, kt)
		if a < e && e > start {
			cs = append(cs, c)
		}
		if a <= start {
			break
		}
	}
	return cs
}

// gemmStreamK returns the k-tile ranges walk tile t is summed in, in the
// order the kernel adds them: the finisher's piece, then the partial
// pieces of the CTAs below it; one range [0, kt) for a whole tile.
func gemmStreamK(t, grid, tiles, sk, kt int) [][2]int {
	if t < tiles-sk {
		return [][2]int{{0, kt}}
	}
	for b := grid - 1; b >= 0; b-- {
		for _, w := range gemmItems(b, grid, tiles, sk, kt) {
			if w.t != t || !w.final {
				continue
			}
			pieces := [][2]int{{w.kb, w.ke}}
			if w.kb == 0 {
				return pieces
			}
			for _, c := range gemmPartials(b, grid, t, tiles, sk, kt) {
				for _, p := range gemmItems(c, grid, tiles, sk, kt) {
					if p.t == t && !p.final {
						pieces = append(pieces, [2]int{p.kb, p.ke})
					}
				}
			}
			return pieces
		}
	}
	return nil
}
