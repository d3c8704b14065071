#!/usr/bin/env python3
"""A tcp echo for the lab's tests (ping and nc may be missing; python3 is not).

  netlab_echo.py server PORT          echo every connection; prints "listening PORT" once bound
  netlab_echo.py client HOST PORT [TIMEOUT_S]
                                      send a line, print "echo <line> <elapsed ms>"; exit 1 on
                                      any failure (refused, reset, timed out)
"""
import socket
import sys
import threading
import time


def serve(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    print("listening %d" % port, flush=True)

    def echo(c):
        with c:
            while True:
                data = c.recv(4096)
                if not data:
                    return
                c.sendall(data)

    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def client(host, port, timeout):
    line = b"hello from %s\n" % socket.gethostname().encode()
    t0 = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout) as c:
            c.sendall(line)
            got = b""
            while not got.endswith(b"\n"):
                data = c.recv(4096)
                if not data:
                    break
                got += data
    except OSError as e:
        print("failed: %s" % e)
        return 1
    if got != line:
        print("failed: sent %r, got %r" % (line, got))
        return 1
    print("echo %s %d" % (got.decode().strip(), (time.monotonic() - t0) * 1000))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]))
    else:
        sys.exit(client(sys.argv[2], int(sys.argv[3]),
                        float(sys.argv[4]) if len(sys.argv) > 4 else 5.0))
