#!/usr/bin/env python3
"""test_memory.py -- the daemon's memory stays within the README's bound
on the inputs that broke it (issue 10, item 8).

usage: test_memory.py --zmount PATH [--keep]

Cases, each on a fresh mount, the daemon's VmHWM read from /proc/PID/status:
  deflate  a 1.5 MB gzip whose data is ONE fixed-Huffman deflate block of
           256 MiB of zeros (written here: no zlib tool makes such a block),
           at cache_size=1M: read whole twice, and at random; every byte must
           be 0, decoded_bytes <= 1.1 x the size per pass (the parked decoder
           streams it once), VmHWM <= base + bound.  It was 241 MiB.
  held     the same kind of file (64 MiB), with every 16th READ held 100 ms
           after the daemon received it (ZMOUNT_TEST_HOLD_READ_MS, fs/loop.h),
           as a busy machine deschedules its worker: the READs the kernel
           sent after it must wait their turn, not walk the decoder past its
           slices (decoded_bytes <= 1.1 x the size; it was 9x when reads were
           noted only once their handler ran).
  parked   16 single-Block xz files of 8 MiB (dictionary 8 MiB), cache_size=4M,
           threads=1: 1 MiB read from each while all 16 stay open, then all
           closed.  Parked decoders share half the cache plus at most one over
           it; VmHWM <= base + bound, and after the closes cache_charged is 0.
           Sixteen parked 8 MiB decoders were 128 MiB.
  mixed    40 gzip decoders parked (one-block 4 MiB files), then 4 xz ones of
           8 MiB, all open, at cache_size=4M (issue 18): cache_charged never
           more than one decoder over the share (each park used to close at
           most 8 others: 24 MiB), VmHWM <= base + bound.
  blocks   an xz file of 200,000 one-byte Blocks (written here), cache_size=4M:
           its map would need 13 MiB, more than cache_size/4, so it is shown
           as `tiny`, empty, its open failing with EIO, with one log line that
           names cache_size, without building anything per Block.  At
           cache_size=64M it is decoded, and VmHWM stays within base + 64M +
           200,000 x 65 bytes + slack.
  tiny     48 MiB of text as two 24 MiB xz Blocks (dictionary 8 MiB, more
           than the cache), cat at cache_size=1M and 4M: the bytes are the
           original's and decoded_bytes <= 1.05 x the size (issue 11: the
           kernel's parallel read-ahead requests made 1M decode 9x, 4M 5x).
  map      an xz file of 257,111 one-byte Blocks, its map just under
           cache_size/4 at cache_size=64M (issue 18): the map costs what the
           README says (65 bytes a Block), and VmHWM <= base + cache_size +
           cache_size/4 + slack after reading it whole.
  dict     24 KB of xz holding 160 MiB of zeros with a 192 MiB dictionary
           (xz --lzma2=dict=192MiB): capped at the Block's size it still
           needs 160 MiB, more than XZDEC_DICT_MAX (128 MiB), and every
           decoding thread could hold one.  Reading it gives EIO and one log
           line naming the file and the dictionary; a good file beside it
           reads right; VmHWM <= base + bound (decoding it took 160 MiB).
  frames   256 MiB of text as 32 zstd frames of 8 MiB (pzstd -p2), cat at
           cache_size=32M after the stat that measures them: each frame
           decoded once by the read (decoded_bytes <= 2.02 x the size, the
           measuring pass included).  Frames decoded ahead were evicted by
           the frame just read, still more recently used: 2.0-2.2 x.
  warm     8 gzip files of 64 MiB of zeros, each ONE deflate block,
           cache_size=32M, noindex: 8 stats at once each run an index pass
           that keeps its first output for the cache (issue 18, item 6).
           The output waiting for its unit's end is reserved in the cache's
           budget, so VmHWM <= base + bound; each pass kept up to
           cache_size/2 outside the cache: 982-1,015 MiB at 256M (134 MiB
           here).  Each directory also holds y.zst, 64 MiB of zeros as 16
           piped 4 MiB zstd frames that state no size: its stat measures
           them and stages the frames for the cache (stage.h), reserved in
           the same budget; 16 stats run at once.  Then every file reads
           back as zeros.
  junkidx  a 2 MB gzip indexed at span=64K into index_dir, then its saved
           index grown to 1 GiB (sparse) with the length in its header to
           match: within the cap the source allows (issue 18, item 9).  At
           cache_size=4M, noindex, the next mount reads the file right, logs
           one line saying the saved index is not usable, rebuilds and saves
           it; VmHWM <= base + bound.  It read the 1 GiB whole first.
  windows  128 MiB of random bytes as gzip -1, span=64K, cache_size=4M: the
           worst case of the gzip index (issue 18, item 10), a checkpoint
           every 64 KiB whose 32 KiB window does not compress.  Each costs
           GZ_POINT bytes outside the cache (measured: 32,778 bytes of
           deflated window, malloc'd, a 40-byte point, its map entry), and
           VmHWM <= base + bound with maps = checkpoints x GZ_POINT; VmRSS
           after the index pass must hold at least 32 KiB per checkpoint
           (else this is not the worst case).
The bound per case is computed from the README's formula, not hard-coded:
cache_size + decoders in use (threads + FUSE threads, each one decoder and one
slice) + one parked decoder over its share + maps + 16 MiB slack.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import binascii
import errno
import gzip
import hashlib
import lzma
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

MiB = 1 << 20
SLACK = 16 * MiB
# A gzip checkpoint at its worst (incompressible window): the window deflated
# at level 1 (32,778 bytes, 32,784 with malloc's header), the 40-byte struct
# gzdec_point, and the reader's map entry (65 bytes, as xz's).
GZ_POINT = 32784 + 40 + 65


# -- one huge deflate block ---------------------------------------------------
class Bits:
    def __init__(self):
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value, nbits):
        """LSB-first, as deflate packs everything but Huffman codes."""
        self.acc |= value << self.n
        self.n += nbits
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def put_code(self, code, nbits):
        """Huffman codes go MSB-first."""
        rev = int(format(code, f'0{nbits}b')[::-1], 2)
        self.put(rev, nbits)

    def flush(self):
        if self.n:
            self.out.append(self.acc & 0xFF)
            self.acc = self.n = 0


def one_block_zeros_gz(path, size):
    """gzip of `size` zeros as a single fixed-Huffman block: one literal 0,
    then matches of 258 at distance 1 (length code 285 = 8-bit code 11000101,
    distance code 0 = 5 bits 00000), then the rest as shorter literal zeros."""
    b = Bits()
    b.put(1, 1)       # BFINAL
    b.put(1, 2)       # BTYPE = 01, fixed Huffman
    b.put_code(0x30, 8)  # literal 0 (codes 0-143: 00110000 + value)
    left = size - 1
    # A whole chunk of matches is a repeating bit pattern: build it once.
    unit = Bits()
    for _ in range(8):  # 8 matches x 13 bits = 104 bits = 13 bytes, byte aligned
        unit.put_code(0b11000101, 8)
        unit.put(0, 5)
    assert unit.n == 0
    nmatch = left // 258
    # Emit single matches until the writer is byte aligned, then whole units.
    while nmatch and b.n:
        b.put_code(0b11000101, 8)
        b.put(0, 5)
        nmatch -= 1
        left -= 258
    units, rest = divmod(nmatch, 8)
    b.out += bytes(unit.out) * units
    left -= units * 8 * 258
    for _ in range(rest):
        b.put_code(0b11000101, 8)
        b.put(0, 5)
        left -= 258
    for _ in range(left):
        b.put_code(0x30, 8)
    b.put_code(0, 7)  # end of block (256: 0000000)
    b.flush()
    # CRC32 of `size` zeros, without 256 MiB in memory: crc32 is streamable.
    crc = 0
    chunk = bytes(1 << 20)
    n = size
    while n:
        k = min(n, len(chunk))
        crc = binascii.crc32(chunk[:k], crc)
        n -= k
    with open(path, 'wb') as f:
        f.write(b'\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03')
        f.write(bytes(b.out))
        f.write(struct.pack('<II', crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


# -- many tiny xz Blocks -------------------------------------------------------
def tiny_blocks_xz(path, nblocks):
    """An xz Stream of nblocks Blocks holding one byte each (LZMA2 stored
    chunks, CRC32 checks), written by hand: xz itself takes minutes."""
    flags = b'\x00\x01'  # check type CRC32
    header = b'\xfd7zXZ\x00' + flags + struct.pack('<I', binascii.crc32(flags))
    # Block Header: size byte (2 => 12 bytes), flags (1 filter), LZMA2 id, props size 1, dict 0
    bh = bytes([0x02, 0x00, 0x21, 0x01, 0x00, 0x00, 0x00, 0x00])
    bh += struct.pack('<I', binascii.crc32(bh))
    records = []
    with open(path, 'wb') as f:
        f.write(header)
        for i in range(nblocks):
            byte = bytes([0x61 + i % 26])
            data = b'\x01\x00\x00' + byte + b'\x00'  # stored chunk of 1 byte, end marker
            unpadded = len(bh) + len(data) + 4
            pad = (-(len(bh) + len(data))) % 4
            f.write(bh + data + b'\x00' * pad + struct.pack('<I', binascii.crc32(byte)))
            records.append((unpadded, 1))
        idx = bytearray(b'\x00') + zmtest.xz_vli(len(records))
        for unpadded, usize in records:
            idx += zmtest.xz_vli(unpadded) + zmtest.xz_vli(usize)
        idx += b'\x00' * ((-len(idx)) % 4)
        idx += struct.pack('<I', binascii.crc32(idx))
        f.write(idx)
        backward = len(idx) // 4 - 1
        footer_body = struct.pack('<I', backward) + flags
        f.write(struct.pack('<I', binascii.crc32(footer_body)) + footer_body + b'YZ')


def expected_tiny(nblocks):
    return bytes(0x61 + i % 26 for i in range(nblocks))


# -- the cases ----------------------------------------------------------------
def bound(cache, threads, decoder, maps=0):
    fuse_threads = 10  # libfuse's default max_threads
    return cache + (threads + fuse_threads) * (decoder + 2 * MiB) + decoder + maps + SLACK


def check_hwm(res, m, what, base, allowed):
    """The daemon's VmHWM against base (its VmRSS right after mounting) + allowed."""
    hwm = zmtest.proc_status(m.proc.pid)['VmHWM']
    lim = base + allowed
    res.check(what, hwm <= lim, f'{hwm / MiB:.0f} MiB > {lim / MiB:.0f} MiB',
              info=f'VmHWM {hwm / MiB:.0f} MiB, base {base / MiB:.0f} MiB, bound {lim / MiB:.0f} MiB')


def case_deflate(args, res, work):
    src = os.path.join(work, 'src-deflate')
    os.mkdir(src)
    size = 256 * MiB
    one_block_zeros_gz(os.path.join(src, 'zeros.gz'), size)
    res.note(f'one-block gzip: {os.path.getsize(os.path.join(src, "zeros.gz"))} bytes')
    res.check('deflate: gzip -t accepts the one-block file',
              subprocess.run(['gzip', '-t', os.path.join(src, 'zeros.gz')]).returncode == 0)
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=1M,threads=2,index_dir=none',
                      results=res, log_path=os.path.join(work, 'deflate.log'), watchdog=900) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        path = os.path.join(mnt, 'zeros')
        res.check('deflate: size', os.stat(path).st_size == size)
        for p in range(2):
            before = zmtest.stats(mnt)['decoded_bytes']
            nonzero = 0
            with open(path, 'rb') as f:
                # the kernel keeps the first pass's pages: drop them, so pass 2 reaches zmount
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    nonzero += len(b) - b.count(0)
            dec = zmtest.stats(mnt)['decoded_bytes'] - before
            res.check(f'deflate: pass {p + 1} reads only zeros', nonzero == 0, f'{nonzero} nonzero')
            res.check(f'deflate: pass {p + 1} decodes each byte once', 0.9 * size <= dec <= 1.1 * size,
                      f'decoded {dec} for {size}', info=f'decoded {dec / size:.2f} x the size')
        rng = random.Random(3)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        try:
            import mmap
            buf = mmap.mmap(-1, 4096)
            for _ in range(3):
                off = rng.randrange(size // 4096) * 4096
                os.preadv(fd, [buf], off)
                if buf[:] != bytes(4096):
                    res.fail('deflate: random read is zeros', f'at {off}')
                    break
            else:
                res.ok('deflate: random reads (O_DIRECT) are zeros')
        finally:
            os.close(fd)
        warn = [ln for ln in m.log_lines() if 'zeros.gz' in ln and 'more than cache_size/2' in ln]
        res.check('deflate: one warning says the span is wider than cache_size/2',
                  len(warn) == 1, f'{len(warn)} lines')
        check_hwm(res, m, 'deflate: VmHWM within the bound',
                  base, bound(1 * MiB, 2, 128 << 10))


def case_held(args, res, work):
    src = os.path.join(work, 'src-held')
    os.mkdir(src)
    size = 64 * MiB
    one_block_zeros_gz(os.path.join(src, 'zeros.gz'), size)
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=1M,threads=2,index_dir=none',
                      results=res, log_path=os.path.join(work, 'held.log'), watchdog=600,
                      env={'ZMOUNT_TEST_HOLD_READ_MS': '100'}) as m:
        path = os.path.join(mnt, 'zeros')
        before = zmtest.stats(mnt)['decoded_bytes']
        nonzero = 0
        with open(path, 'rb') as f:
            for b in iter(lambda: f.read(1 << 20), b''):
                nonzero += len(b) - b.count(0)
        dec = zmtest.stats(mnt)['decoded_bytes'] - before
        res.check('held: the daemon says it holds READs (the hook is there)',
                  any('test hook' in ln and '100 ms' in ln for ln in m.log_lines()))
        res.check('held: reads only zeros', nonzero == 0, f'{nonzero} nonzero')
        res.check('held: each byte decoded once', dec <= 1.1 * size, f'decoded {dec} for {size}',
                  info=f'decoded {dec / size:.2f} x the size')


def case_warm(args, res, work):
    src = os.path.join(work, 'src-warm')
    os.mkdir(src)
    size, n = 64 * MiB, 8
    # one directory each: the kernel serializes a FUSE directory's lookups
    for i in range(n):
        os.mkdir(os.path.join(src, f'd{i}'))
    one_block_zeros_gz(os.path.join(src, 'd0', 'z.gz'), size)
    frame = subprocess.run(['zstd', '-q', '-1', '-c', '-'], input=bytes(4 * MiB),
                           stdout=subprocess.PIPE, check=True).stdout
    with open(os.path.join(src, 'd0', 'y.zst'), 'wb') as f:
        f.write(frame * (size // (4 * MiB)))
    for i in range(1, n):
        for name in ('z.gz', 'y.zst'):
            shutil.copyfile(os.path.join(src, 'd0', name), os.path.join(src, f'd{i}', name))
    files = [f'd{i}/{name}' for i in range(n) for name in ('z', 'y')]
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=32M,threads=2,index_dir=none,noindex',
                      results=res, log_path=os.path.join(work, 'warm.log'), watchdog=600) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        sizes = [None] * len(files)

        def stat(i):
            sizes[i] = os.stat(os.path.join(mnt, files[i])).st_size
        ts = [threading.Thread(target=stat, args=(i,)) for i in range(len(files))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        res.check('warm: 16 parallel first stats give the size', sizes == [size] * len(files),
                  f'{sizes}')
        check_hwm(res, m, 'warm: VmHWM of 16 parallel index and measuring passes within the bound',
                  base, bound(32 * MiB, 2, 128 << 10))
        st = zmtest.stats(mnt)
        res.note(f'warm: after the passes cache_used {st.get("cache_used")}, '
                 f'decoded_bytes {st.get("decoded_bytes")}')
        bad = []
        for name in files:
            with open(os.path.join(mnt, name), 'rb') as f:
                got = 0
                while True:
                    b = f.read(1 << 20)
                    if not b:
                        break
                    if b.count(0) != len(b):
                        bad.append(f'{name} at {got}')
                        break
                    got += len(b)
                if got != size and not bad:
                    bad.append(f'{name}: {got} bytes')
        res.check('warm: every file reads back as its zeros', not bad, ', '.join(bad[:3]))


def case_junkidx(args, res, work):
    src, idx = os.path.join(work, 'src-junkidx'), os.path.join(work, 'idx-junkidx')
    os.mkdir(src)
    os.mkdir(idx, 0o700)
    data = random.Random(5).randbytes(2 * MiB)
    with open(os.path.join(src, 'r.gz'), 'wb') as f:
        f.write(gzip.compress(data, 1))
    mnt = os.path.join(work, 'mnt')
    opts = f'cache_size=4M,threads=2,span=64K,index_dir={idx},noindex'
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res,
                      log_path=os.path.join(work, 'junkidx1.log'), watchdog=300):
        res.check('junkidx: first mount indexes the file', os.stat(os.path.join(mnt, 'r')).st_size
                  == len(data))
    zmis = [n for n in os.listdir(idx) if n.endswith('.zmi')]
    res.check('junkidx: one index saved', len(zmis) == 1, f'{os.listdir(idx)}')
    if len(zmis) != 1:
        return
    zmi = os.path.join(idx, zmis[0])
    junk = 1 << 30
    with open(zmi, 'r+b') as f:
        f.seek(16)
        f.write(struct.pack('<Q', junk))
        f.truncate(junk)
    with zmtest.Mount(args.zmount, src, mnt, opts=opts, results=res,
                      log_path=os.path.join(work, 'junkidx2.log'), watchdog=300) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        res.check('junkidx: the file reads right beside a junk index',
                  open(os.path.join(mnt, 'r'), 'rb').read() == data)
        lines = [ln for ln in m.log_lines() if 'r.gz' in ln and 'saved index' in ln]
        res.check('junkidx: one log line says the saved index is not usable', len(lines) == 1
                  and 'not usable' in lines[0], '\n'.join(lines) or 'no line',
                  info=lines[0].strip() if lines else '')
        check_hwm(res, m, 'junkidx: VmHWM within the bound', base, bound(4 * MiB, 2, 128 << 10))
    res.check('junkidx: the index was rebuilt and saved over the junk',
              os.path.getsize(zmi) < 4 * MiB, f'{os.path.getsize(zmi)} bytes')


def case_windows(args, res, work):
    src = os.path.join(work, 'src-windows')
    os.mkdir(src)
    size = 128 * MiB
    with open(os.path.join(src, 'rand.gz'), 'wb') as f:
        z = zlib.compressobj(1, zlib.DEFLATED, 31)
        for _ in range(size // MiB):
            f.write(z.compress(os.urandom(MiB)))
        f.write(z.flush())
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=4M,threads=2,span=64K,'
                      'index_dir=none,noindex', results=res,
                      log_path=os.path.join(work, 'windows.log'), watchdog=600) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        path = os.path.join(mnt, 'rand')
        res.check('windows: size', os.stat(path).st_size == size)
        info = dict(ln.split('=', 1) for ln in
                    os.getxattr(path, 'user.zmount.info').decode().splitlines() if '=' in ln)
        points = int(info.get('checkpoints', 0))  # gzip: its index's
        rss = zmtest.proc_status(m.proc.pid)['VmRSS']
        used = zmtest.stats(mnt).get('cache_used', 0)
        per = (rss - base - used) / max(points, 1)
        res.check('windows: a checkpoint every 64 KiB or so', size // (80 << 10) <= points
                  <= size // (64 << 10) + 1, f'{points} checkpoints')
        res.check('windows: the index holds at least 32 KiB per checkpoint (the worst case)',
                  per >= 32 * 1024, f'{per:.0f} bytes per checkpoint',
                  info=f'{points} checkpoints, VmRSS - base - cache_used = {per:.0f} bytes each')
        check_hwm(res, m, 'windows: VmHWM within the bound with GZ_POINT per checkpoint',
                  base, bound(4 * MiB, 2, 128 << 10, maps=points * GZ_POINT))


def case_parked(args, res, work):
    src = os.path.join(work, 'src-parked')
    os.mkdir(src)
    text = b''.join(b'%08d some log text to compress, line after line\n' % i for i in range(170000))
    text = text[:8 * MiB]
    for i in range(16):
        with open(os.path.join(src, f'f{i:02d}.xz'), 'wb') as f:
            f.write(lzma.compress(text[i:] + text[:i], format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64,
                                  filters=[{'id': lzma.FILTER_LZMA2, 'preset': 0,
                                            'dict_size': 8 * MiB}]))
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=4M,threads=1,index_dir=none',
                      results=res, log_path=os.path.join(work, 'parked.log'), watchdog=900) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        files = [open(os.path.join(mnt, f'f{i:02d}'), 'rb') for i in range(16)]
        ok = True
        for i, f in enumerate(files):
            got = f.read(1 * MiB)
            want = (text[i:] + text[:i])[:1 * MiB]
            ok &= got == want
        res.check('parked: 1 MiB of each of 16 open files is right', ok)
        st = zmtest.stats(mnt)
        res.check('parked: parked decoders within half the cache, or one over it',
                  st.get('cache_charged', 0) <= 2 * MiB + 9 * MiB,
                  f'cache_charged {st.get("cache_charged")}',
                  info=f'cache_charged {st.get("cache_charged", 0) / MiB:.1f} MiB')
        for f in files:
            f.close()
        time.sleep(0.2)
        st = zmtest.stats(mnt)
        res.check('parked: no decoder stays parked once its file is closed',
                  st.get('cache_charged', -1) == 0, f'cache_charged {st.get("cache_charged")}')
        # what is left: the cache, xzdec's stock of spare buffers (8 MiB at most), slack
        rss = zmtest.proc_status(m.proc.pid)['VmRSS']
        lim = base + 4 * MiB + 8 * MiB + SLACK
        res.check('parked: RSS after the closes is back near the cache', rss <= lim,
                  f'{rss / MiB:.0f} MiB > {lim / MiB:.0f} MiB', info=f'VmRSS {rss / MiB:.0f} MiB')
        check_hwm(res, m, 'parked: VmHWM within the bound',
                  base, bound(4 * MiB, 1, 9 * MiB))


def case_mixed(args, res, work):
    """Issue 18 item 5: many small decoders parked first, then large ones.
    40 gzip files of one 4 MiB deflate block (streamed at cache_size=4M: a
    gzip decoder is charged 80 KiB), then 4 xz files with an 8 MiB
    dictionary, all kept open, 1 MiB read from each gzip file and 4 KiB from
    each xz one.  Each park closed at most 8 others, so the xz decoders
    piled up behind the gzip ones (24 MiB parked after the third); now cache_charged stays within the share (2 MiB)
    or one decoder over it, and VmHWM within the bound."""
    src = os.path.join(work, 'src-mixed')
    os.mkdir(src)
    for i in range(40):
        one_block_zeros_gz(os.path.join(src, f'g{i:02d}.gz'), 4 * MiB)
    text = b''.join(b'%08d some log text to compress, line after line\n' % i for i in range(170000))
    text = text[:8 * MiB]
    for i in range(4):
        with open(os.path.join(src, f'x{i}.xz'), 'wb') as f:
            f.write(lzma.compress(text[i:] + text[:i], format=lzma.FORMAT_XZ,
                                  filters=[{'id': lzma.FILTER_LZMA2, 'preset': 0,
                                            'dict_size': 8 * MiB}]))
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=4M,threads=1,index_dir=none',
                      results=res, log_path=os.path.join(work, 'mixed.log'), watchdog=900) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        files = [open(os.path.join(mnt, f'g{i:02d}'), 'rb') for i in range(40)]
        ok = all(f.read(MiB) == bytes(MiB) for f in files)
        most = 0
        for i in range(4):
            # 4 KiB: the kernel's first read-ahead stays in the first slice, one park each
            f = open(os.path.join(mnt, f'x{i}'), 'rb', buffering=0)
            files.append(f)
            ok &= f.read(4096) == (text[i:] + text[:i])[:4096]
            most = max(most, zmtest.stats(mnt).get('cache_charged', 0))
        res.check('mixed: the bytes read from each of 44 open files are right', ok)
        res.check('mixed: parked decoders within half the cache, or one over it',
                  most <= 9 * MiB, f'cache_charged up to {most / MiB:.1f} MiB',
                  info=f'cache_charged up to {most / MiB:.1f} MiB')
        for f in files:
            f.close()
        check_hwm(res, m, 'mixed: VmHWM within the bound', base, bound(4 * MiB, 1, 9 * MiB))


def case_blocks(args, res, work):
    src = os.path.join(work, 'src-blocks')
    os.mkdir(src)
    n = 200000
    tiny_blocks_xz(os.path.join(src, 'tiny.xz'), n)
    want = expected_tiny(n)
    res.check('blocks: xz -dc agrees with the hand-made file',
              subprocess.run(['xz', '-dc', os.path.join(src, 'tiny.xz')],
                             stdout=subprocess.PIPE).stdout == want)
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=4M,index_dir=none',
                      results=res, log_path=os.path.join(work, 'blocks4.log'), watchdog=600) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        names = os.listdir(mnt)
        res.check('blocks: at 4M the file is shown empty under its stripped name',
                  names == ['tiny'] and os.stat(os.path.join(mnt, 'tiny')).st_size == 0,
                  f'{names}')
        try:
            open(os.path.join(mnt, 'tiny'), 'rb').close()
            res.fail('blocks: at 4M its open fails with EIO', 'it opened')
        except OSError as e:
            res.check('blocks: at 4M its open fails with EIO', e.errno == 5, str(e))
        lines = [ln for ln in m.log_lines() if 'tiny.xz' in ln]
        res.check('blocks: one log line says why and names cache_size, not salvage',
                  len(lines) == 1 and 'Blocks' in lines[0] and 'cache_size' in lines[0]
                  and 'salvage' not in lines[0], '\n'.join(lines))
        check_hwm(res, m, 'blocks: VmHWM at 4M within the bound',
                  base, bound(4 * MiB, 2, 0))
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=64M,index_dir=none',
                      results=res, log_path=os.path.join(work, 'blocks64.log'), watchdog=600) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        got = open(os.path.join(mnt, 'tiny'), 'rb').read()
        res.check('blocks: at 64M all 200,000 Blocks read right', got == want)
        check_hwm(res, m, 'blocks: VmHWM at 64M within the bound',
                  base, bound(64 * MiB, 2, 0, maps=n * 65))


def case_map(args, res, work):
    """Issue 18: the map's worst case.  The largest xz map a reader admits
    is cache_size/4 at 65 bytes a Block (fmt_xz.c's XZ_BLOCK_COST: the Index
    entry, 48, the map's start and entry, 8 + 8, the bad mark, 1); maps are
    not charged to the cache but sit beside it, one per open archive.  A
    file just under that cap, opened (stat builds the map) and read whole at
    cache_size=64M: VmRSS after the stat <= base + the map's 65 bytes a Block
    + 4 MiB, and VmHWM <= base + cache_size + cache_size/4 + slack."""
    src = os.path.join(work, 'src-map')
    os.mkdir(src)
    cache = 64 * MiB
    n = cache // 4 // 65 - 1000  # 257,111 Blocks: a map of 15.9 MiB
    tiny_blocks_xz(os.path.join(src, 'edge.xz'), n)
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=64M,threads=1,index_dir=none',
                      results=res, log_path=os.path.join(work, 'map.log'), watchdog=600) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        path = os.path.join(mnt, 'edge')
        res.check('map: a map just under cache_size/4 is admitted', os.path.exists(path))
        res.check('map: size', os.stat(path).st_size == n)
        rss = zmtest.proc_status(m.proc.pid)['VmRSS'] - base
        res.check('map: the map costs 65 bytes a Block', rss <= n * 65 + 4 * MiB,
                  f'{rss / MiB:.1f} MiB for {n} Blocks',
                  info=f'VmRSS after the stat: base + {rss / MiB:.1f} MiB ({rss / n:.1f} bytes a Block)')
        with open(path, 'rb') as f:
            got = f.read()
        res.check('map: all Blocks read right', got == expected_tiny(n))
        check_hwm(res, m, 'map: VmHWM within cache_size + cache_size/4 + slack',
                  base, cache + cache // 4 + SLACK)


def case_dict(args, res, work):
    src = os.path.join(work, 'src-dict')
    os.mkdir(src)
    with open(os.path.join(src, 'bomb.xz'), 'wb') as f:
        xz = subprocess.Popen(['xz', '--lzma2=preset=0,dict=192MiB', '-c'], stdin=subprocess.PIPE,
                              stdout=f)
        for _ in range(160):
            xz.stdin.write(bytes(MiB))
        xz.stdin.close()
        res.check('dict: xz made the file', xz.wait() == 0)
    good = b'a line that is not a bomb\n' * 40000
    with open(os.path.join(src, 'good.xz'), 'wb') as f:
        f.write(lzma.compress(good, format=lzma.FORMAT_XZ))
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=4M,threads=2,index_dir=none',
                      results=res, log_path=os.path.join(work, 'dict.log'), watchdog=300) as m:
        base = zmtest.proc_status(m.proc.pid)['VmRSS']
        err = None
        try:
            with open(os.path.join(mnt, 'bomb'), 'rb') as f:
                while f.read(1 << 20):
                    pass
        except OSError as e:
            err = e.errno
        res.check('dict: reading the bomb gives EIO', err == errno.EIO, f'errno {err}')
        # The error; the checkpoint pass adds an info line that the Block gets none.
        lines = [ln for ln in m.log_lines()
                 if 'bomb.xz' in ln and 'dictionary' in ln and 'error' in ln]
        res.check('dict: one log line names the file and the dictionary', len(lines) == 1,
                  f'{len(lines)} lines', info=lines[0].strip() if lines else '')
        res.check('dict: the good file beside it reads right',
                  open(os.path.join(mnt, 'good'), 'rb').read() == good)
        check_hwm(res, m, 'dict: VmHWM within the bound',
                  base, bound(4 * MiB, 2, 1 * MiB))


def case_frames(args, res, work):
    src = os.path.join(work, 'src-frames')
    os.mkdir(src)
    size = 256 * MiB
    line = b'%010d GET /api/v1/items?page=%d 200 %d bytes in %d ms\n'
    h = hashlib.sha256()
    with subprocess.Popen(['pzstd', '-q', '-p2', '-3', '-o', os.path.join(src, 'f.zst')],
                          stdin=subprocess.PIPE) as z:
        done, i = 0, 0
        while done < size:
            chunk = b''.join(line % (i + j, (i + j) % 97, (i + j) * 7 % 5000, (i + j) % 13)
                             for j in range(20000))
            chunk = chunk[:size - done]
            z.stdin.write(chunk)
            h.update(chunk)
            done += len(chunk)
            i += 20000
        z.stdin.close()
        res.check('frames: pzstd made the file', z.wait() == 0)
    mnt = os.path.join(work, 'mnt')
    with zmtest.Mount(args.zmount, src, mnt, opts='cache_size=32M,index_dir=none',
                      results=res, log_path=os.path.join(work, 'frames.log'), watchdog=600):
        path = os.path.join(mnt, 'f')
        res.check('frames: size', os.stat(path).st_size == size)
        got = hashlib.sha256()
        with open(path, 'rb') as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                got.update(b)
        dec = zmtest.stats(mnt)['decoded_bytes']
        res.check('frames: cat gives the original bytes', got.digest() == h.digest())
        res.check('frames: each frame decoded once by the read', dec <= 2.02 * size,
                  f'decoded {dec} for {size} ({dec / size:.2f} x, measuring pass included)',
                  info=f'decoded {dec / size:.3f} x the size, measuring pass included')


def case_tiny(args, res, work):
    src = os.path.join(work, 'src-tiny')
    os.mkdir(src)
    rng = random.Random(11)
    words = [b'alpha', b'beta', b'gamma', b'delta', b'sensor', b'value', b'ok', b'warn']
    size = 48 * MiB
    lines = []
    n = 0
    while n < 8 * MiB:  # 8 MiB of lines, written 6 times: quicker than 48 MiB of them
        line = b'%d %s %x %s\n' % (rng.getrandbits(40), rng.choice(words),
                                    rng.getrandbits(64), rng.choice(words))
        lines.append(line)
        n += len(line)
    pool = b''.join(lines)
    h = hashlib.sha256()
    with open(os.path.join(src, 'two'), 'wb') as f:
        left = size
        i = 0
        while left:
            part = (b'part %d\n' % i + pool)[:left]
            f.write(part)
            h.update(part)
            left -= len(part)
            i += 1
    want = h.hexdigest()
    subprocess.run(['xz', '-T1', '--lzma2=preset=1,dict=8MiB', '--block-size=24MiB',
                    os.path.join(src, 'two')], check=True)
    mnt = os.path.join(work, 'mnt')
    for cs in ('1M', '4M'):
        with zmtest.Mount(args.zmount, src, mnt, opts=f'cache_size={cs},index_dir=none',
                          results=res, log_path=os.path.join(work, f'tiny-{cs}.log'),
                          watchdog=600):
            path = os.path.join(mnt, 'two')
            before = zmtest.stats(mnt)['decoded_bytes']
            t0 = time.monotonic()
            p = subprocess.Popen(['cat', path], stdout=subprocess.PIPE)
            got = hashlib.sha256()
            for b in iter(lambda: p.stdout.read(1 << 20), b''):
                got.update(b)
            ok = p.wait() == 0
            took = time.monotonic() - t0
            dec = zmtest.stats(mnt)['decoded_bytes'] - before
            res.check(f'tiny {cs}: cat gives the original bytes', ok and got.hexdigest() == want)
            res.check(f'tiny {cs}: each byte decoded once', dec <= 1.05 * size,
                      f'decoded {dec} for {size} ({dec / size:.2f} x)',
                      info=f'decoded {dec / size:.3f} x the size in {took:.1f} s')


CASES = (('deflate', case_deflate), ('held', case_held), ('warm', case_warm), ('junkidx', case_junkidx),
         ('windows', case_windows), ('parked', case_parked), ('mixed', case_mixed),
         ('blocks', case_blocks), ('map', case_map), ('dict', case_dict), ('frames', case_frames),
         ('tiny', case_tiny))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--only', choices=[name for name, _ in CASES])
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    work = tempfile.mkdtemp(prefix='zmount-memory-')
    os.mkdir(os.path.join(work, 'mnt'))
    try:
        for name, fn in CASES:
            if args.only in (None, name):
                t0 = time.monotonic()
                fn(args, res, work)
                res.note(f'{name}: {time.monotonic() - t0:.1f} s')
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
