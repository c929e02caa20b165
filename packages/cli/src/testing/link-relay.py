"""A slow wire between two TAP devices (decision 0213): every Ethernet frame read from one is
written to the other `--each-way-ms` later, in the order it came, in both directions.

The kernel here has no netem, so a fleet's link gets its latency from this process: the node's
veth ends on a bridge with TAP A, the hub's bridge holds TAP B, and every frame between them waits
here. What crosses is the frames themselves (ARP, TCP handshakes, TLS, retransmissions), so the
TCP stacks at both ends see the added round trip as they would on a slow wire. Loss is not made
here: it is the kernel's (nft, fleet-net.ts).

    python3 link-relay.py TAP_A TAP_B EACH_WAY_MS

Prints "ready" once both devices are open; ends when either goes away (its namespace deleted)
or on SIGTERM. Node.js cannot open a TAP device (it needs an ioctl), hence Python.
"""

import collections
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def open_tap(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def main() -> None:
    a, b, each_way = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    fa, fb = open_tap(a), open_tap(b)
    peer = {fa: fb, fb: fa}
    # Frames on their way to a device: (when it is due, frame), oldest first. The delay is the
    # same for every frame, so a FIFO is in due order.
    waiting = {fa: collections.deque(), fb: collections.deque()}
    print("ready", flush=True)
    while True:
        due = [q[0][0] for q in waiting.values() if q]
        timeout = max(0.0, min(due) - time.monotonic()) if due else None
        readable, _, _ = select.select([fa, fb], [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            while True:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not frame:
                    return
                waiting[peer[fd]].append((now + each_way, frame))
        for fd, queue in waiting.items():
            while queue and queue[0][0] <= now:
                frame = queue.popleft()[1]
                try:
                    os.write(fd, frame)
                except BlockingIOError:
                    pass  # the device's queue is full: the frame is dropped, as a wire's would be


if __name__ == "__main__":
    try:
        main()
    except OSError:
        sys.exit(0)  # a device went away: the link is gone, and so is its wire
