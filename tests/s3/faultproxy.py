#!/usr/bin/env python3
"""An HTTP/1.1 proxy that injects faults on a schedule, for the S3 tests.

It sits between a client and one upstream server (RGW).  Each request the
client sends takes the next action of the schedule (then "pass" when the
schedule is empty):

  pass      forward the request; stream the answer back
  503, 429  answer that status (an S3 <Error> body) without asking upstream
  reset     read the request, then reset the connection (TCP RST)
  delay:MS  wait MS milliseconds, then forward
  cut:N     forward, then reset the connection after N bytes of the answer

It counts requests and the bytes forwarded each way, so a test can compare
what was fetched with what it needed.

usage: faultproxy.py --upstream HOST:PORT [--schedule "ACTION ..."] [--log FILE]
--log appends one line per request: its action, request line and Range header.
Listens on two free ports of 127.0.0.1 and prints "PROXY_PORT CONTROL_PORT"
on one line when ready.  The control port takes one command per line and
answers one line:
  push ACTION...   append actions to the schedule            -> "ok"
  clear            empty the schedule and zero the counters  -> "ok"
  stats            -> "requests R down B up U actions A connections C"
                      (B bytes upstream->client, U client->upstream,
                       A scheduled actions taken, C client connections)
It exits when stdin closes (so it dies with the test that started it) or on
SIGTERM.  Requests must carry Content-Length when they have a body (no
chunked uploads) and must not be pipelined; curl does neither.
"""
import argparse
import asyncio
import signal
import socket
import struct
import sys

ACTIONS = ('pass', '503', '429', 'reset')


def valid(action):
    if action in ACTIONS:
        return True
    name, _, num = action.partition(':')
    return name in ('delay', 'cut') and num.isdigit()


class Proxy:
    def __init__(self, upstream, schedule, log=None):
        self.log = log
        self.host, port = upstream.rsplit(':', 1)
        self.port = int(port)
        self.schedule = list(schedule)
        self.requests = self.down = self.up = self.taken = self.conns = 0

    def next_action(self):
        self.requests += 1
        if not self.schedule:
            return 'pass'
        self.taken += 1
        return self.schedule.pop(0)

    @staticmethod
    def rst(writer):
        sock = writer.get_extra_info('socket')
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
            except OSError:
                pass
        writer.transport.abort()

    async def pipe_down(self, ureader, cwriter, state):
        """Upstream to client, counting; honours a cut armed by the request loop."""
        try:
            while True:
                data = await ureader.read(65536)
                if not data:
                    break
                if state['cut'] is not None:
                    if len(data) >= state['cut']:
                        data = data[:state['cut']]
                        cwriter.write(data)
                        self.down += len(data)
                        await cwriter.drain()
                        self.rst(cwriter)
                        return
                    state['cut'] -= len(data)
                cwriter.write(data)
                self.down += len(data)
                await cwriter.drain()
        except (ConnectionError, OSError):
            pass
        cwriter.close()

    @staticmethod
    def error_answer(status, head_only):
        reason = {'503': 'Service Unavailable', '429': 'Too Many Requests'}[status]
        code = {'503': 'SlowDown', '429': 'TooManyRequests'}[status]
        body = b'<?xml version="1.0"?><Error><Code>%s</Code></Error>' % code.encode()
        head = ('HTTP/1.1 %s %s\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n'
                % (status, reason, len(body))).encode()
        return head if head_only else head + body

    async def client(self, creader, cwriter):
        uwriter = None
        pipe = None
        state = {'cut': None}
        self.conns += 1
        try:
            ureader, uwriter = await asyncio.open_connection(self.host, self.port)
            pipe = asyncio.ensure_future(self.pipe_down(ureader, cwriter, state))
            while True:
                head = await creader.readuntil(b'\r\n\r\n')
                length = 0
                for line in head.split(b'\r\n')[1:]:
                    name, _, value = line.partition(b':')
                    if name.strip().lower() == b'content-length':
                        length = int(value.strip())
                action = self.next_action()
                if self.log:
                    lines = head.split(b'\r\n')
                    rng = [ln for ln in lines if ln.lower().startswith(b'range:')]
                    self.log.write('%s %s %s\n' % (action, lines[0].decode(errors='replace'),
                                                   rng[0].decode(errors='replace') if rng else ''))
                    self.log.flush()
                if action == 'pass' and length:
                    # Head first, then the body as it comes: a client that
                    # sent "Expect: 100-continue" waits for the server.
                    uwriter.write(head)
                    self.up += len(head)
                    while length:
                        chunk = await creader.read(min(length, 65536))
                        if not chunk:
                            return
                        uwriter.write(chunk)
                        self.up += len(chunk)
                        length -= len(chunk)
                        await uwriter.drain()
                    continue
                body = await creader.readexactly(length) if length else b''
                if action in ('503', '429'):
                    cwriter.write(self.error_answer(action, head.startswith(b'HEAD ')))
                    await cwriter.drain()
                    continue
                if action == 'reset':
                    self.rst(cwriter)
                    return
                if action.startswith('delay:'):
                    await asyncio.sleep(int(action[6:]) / 1000)
                if action.startswith('cut:'):
                    state['cut'] = int(action[4:])
                uwriter.write(head + body)
                self.up += len(head) + len(body)
                await uwriter.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError,
                ValueError, asyncio.CancelledError):
            pass
        finally:
            if pipe:
                pipe.cancel()
            if uwriter:
                uwriter.transport.abort()
            cwriter.transport.abort()

    async def control(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                words = line.decode().split()
                if words and words[0] == 'push' and all(valid(a) for a in words[1:]):
                    self.schedule.extend(words[1:])
                    answer = 'ok'
                elif words == ['clear']:
                    self.schedule.clear()
                    self.requests = self.down = self.up = self.taken = self.conns = 0
                    answer = 'ok'
                elif words == ['stats']:
                    answer = 'requests %d down %d up %d actions %d connections %d' % (
                        self.requests, self.down, self.up, self.taken, self.conns)
                else:
                    answer = 'error: unknown command'
                writer.write((answer + '\n').encode())
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--upstream', required=True)
    ap.add_argument('--schedule', default='')
    ap.add_argument('--log')
    args = ap.parse_args()
    schedule = args.schedule.split()
    bad = [a for a in schedule if not valid(a)]
    if bad:
        sys.exit('faultproxy: unknown action %s' % bad[0])
    proxy = Proxy(args.upstream, schedule, open(args.log, 'a') if args.log else None)
    srv = await asyncio.start_server(proxy.client, '127.0.0.1', 0)
    ctl = await asyncio.start_server(proxy.control, '127.0.0.1', 0)
    print(srv.sockets[0].getsockname()[1], ctl.sockets[0].getsockname()[1], flush=True)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, lambda: done.done() or done.set_result(None))
    # Exit when stdin closes: the test that started us is gone.
    loop.add_reader(sys.stdin.fileno(),
                    lambda: sys.stdin.buffer.raw.read(4096) or done.done() or done.set_result(None))
    await done
    srv.close()
    ctl.close()


if __name__ == '__main__':
    asyncio.run(main())
