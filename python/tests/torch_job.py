"""What the torch tests share: whether the library is there, and the torchrun variables of a
one-rank job for a process started without torchrun."""

import os
import socket

import hiercoll


def library_ok():
    try:
        hiercoll.library_path()
        return True
    except hiercoll.NotSupportedError:
        return False


def one_rank_env(rendezvous_port=False):
    """Sets the torchrun variables of a one-rank job where the process has none; with
    rendezvous_port, HIERCOLL_PORT too (hiercoll's own rendezvous, where no store is used)."""
    if "RANK" in os.environ:
        return
    # Two ports: torch.distributed's store listens on MASTER_PORT, and a
    # later test of the same process may start one while hiercoll's own
    # rendezvous still listens on HIERCOLL_PORT.
    with socket.socket() as a, socket.socket() as b:
        a.bind(("127.0.0.1", 0))
        b.bind(("127.0.0.1", 0))
        port, own = a.getsockname()[1], b.getsockname()[1]
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if rendezvous_port:
        os.environ["HIERCOLL_PORT"] = str(own)
