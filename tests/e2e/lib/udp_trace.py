#!/usr/bin/env python3
"""Paris-traceroute style check of the test fabric: every TTL on one fixed
UDP 5-tuple (a socket bound to SPORT), hops read from the ICMP errors the
kernel queues (IP_RECVERR), so no raw socket is needed.

usage: udp_trace.py DST DPORT SPORT [MAXTTL]
prints the answering address of each hop, one per line ("*" for none);
the last is DST itself when it answered port-unreachable.
"""
import select
import socket
import struct
import sys

IP_RECVERR = 11
SO_EE_ORIGIN_ICMP = 2


def hop(dst, dport, sport, ttl, timeout=1.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", sport))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
    s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    s.connect((dst, dport))
    try:
        s.send(b"netdiag-e2e-trace")
    except OSError:
        pass
    try:
        r, _, _ = select.select([s], [], [], timeout)
        if not r:
            return "*"
        _, anc, _, _ = s.recvmsg(512, 512, socket.MSG_ERRQUEUE)
        for level, kind, data in anc:
            if level == socket.IPPROTO_IP and kind == IP_RECVERR:
                _errno, origin, _type, _code, _pad, _info, _data = struct.unpack("IBBBBII", data[:16])
                if origin == SO_EE_ORIGIN_ICMP:
                    return socket.inet_ntoa(data[20:24])
        return "?"
    finally:
        s.close()


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    dst, dport, sport = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    maxttl = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    for ttl in range(1, maxttl + 1):
        addr = hop(dst, dport, sport, ttl)
        print(addr)
        if addr == dst:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
