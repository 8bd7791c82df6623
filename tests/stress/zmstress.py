#!/usr/bin/env python3
"""zmstress.py -- a randomized differential checker for zmount (fsx/fsstress style).

usage: zmstress.py --zmount PATH [--seed N] [--runs K] [--minutes M | --ops N]
                   [--workers W] [--opts OPTS] [--sflag] [--hwm-mib N]
                   [--deadline S] [--keep] [--workdir DIR] [--s3 DIR]
       zmstress.py --zmount PATH --replay FILE [--shrink]

One run = one seed:
  1. a seeded source tree (xz: one Block, many Blocks, Blocks larger than
     cache_size/2, tiny Blocks; gzip: one member, many members, one deflate
     block of a few MiB; a one-Block xz and a one-frame zstd file of 2 MiB,
     each changed once, that get checkpoints under span=64K; plain files; a deep directory chain; names with
     spaces and newlines; a .tar.gz and a one-Block .tar.xz, mounted with -o tar, whose
     members are files of the tree read through their x.tar/ directories and never
     changed), and a model: for every visible path, the bytes of
     every version it will have (work/model/FID/VER);
  2. a seeded plan: per worker process a list of open / pread / close / ls
     ops (random offsets and lengths, O_DIRECT or not, more open handles than
     files), and for the mutator a timed list of source mutations (replace by
     rename, in-place rewrite that restores the mtime, truncate, append,
     delete, a FIFO swapped in, a directory swapped for a symlink);
  3. zmount is mounted with the options the seed picks from MATRIX, the
     workers and the mutator run concurrently, and every result is checked:
       - every op has a deadline; a hang is a failure (the daemon's threads
         are dumped from /proc/PID/task/*/stack and it is killed);
       - a read returns the model's bytes of a version that was current when
         its handle was opened, or EIO (only if the file was changed since
         the handle was opened), and one handle of an archive never returns
         bytes of two versions;
       - an open gives a version current during the open, or ENOENT/ESTALE/
         EIO/ELOOP when the file was being changed or was gone;
       - the daemon does not die; its VmHWM stays within --hwm-mib (default
         cache_size + 64 MiB);
       - with span=64K and a cache under a quarter of the tree, some read
         resumed at a checkpoint (resumes= of user.zmount.info, summed over
         the archives at the end; the count is printed in every run);
       - fusermount3 -u works and the daemon exits 0.
  With --s3 DIR (a gateway `tests/s3/rgw.sh up DIR` made) the tree is
  uploaded under a prefix of the run's own and mounted as s3://BUCKET/PREFIX;
  each mutation is then mirrored as a PUT of the file's whole new content (an
  overwrite) or a DELETE, so any of them may fail a handle with EIO, never
  mix two versions in it; the FIFO and directory swaps are left out; the
  VmHWM bound grows by S3SRC_BYTES_PER_SOURCE (8 MiB) per file.
  A failure prints the seed, the options and a replay file (the exact op
  lists); --replay FILE runs it again and --shrink bisects it to a smaller
  list that still fails the same way.

Stdlib only.  Exit status: 0 all passed, 1 a failure, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import errno
import io
import json
import lzma
import multiprocessing as mp
import os
import random
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
import zlib
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'mount'))
import zmtest  # noqa: E402
from zmtest import vm_hwm_kib  # noqa: E402

sys.path.insert(0, os.path.join(HERE, '..', 's3'))
import s3util  # noqa: E402

KiB = 1024
MiB = 1024 * KiB
ATTR_TIMEOUT = 1.0      # zmount's default timeout=1: how long the kernel may show an old version
SLACK = 1.5             # scheduling slack on top of it (2 cores shared with other jobs)

# The options matrix: the seed picks a row (seed % len).  Rows 0..3 are the CI run.
# span=64K: every xz Block and zstd frame over 128 KiB gets checkpoints (issue 19),
# built by the background pass while the workers read, so reads resume at them
# (in rows whose cache is far smaller than the tree: with 256M every unit stays cached).
MATRIX = [
    ('threads=1,cache_size=1M', []),
    ('threads=2,cache_size=4M,span=64K', []),
    ('cache_size=256M', ['-s']),
    ('threads=2,cache_size=1M,span=64K', ['-s']),
    ('threads=1,cache_size=4M', []),
    ('threads=2,cache_size=256M', []),
]

SIZES = {'K': KiB, 'M': MiB, 'G': 1024 * MiB}


def parse_size(s):
    s = s.strip()
    if s and s[-1].upper() in SIZES:
        return int(s[:-1]) * SIZES[s[-1].upper()]
    return int(s)


def cache_size_of(opts):
    m = re.search(r'cache_size=([0-9]+[KMGkmg]?)', opts or '')
    return parse_size(m.group(1)) if m else 256 * MiB


# --------------------------------------------------------------------------
# content: deterministic from (seed, fid, ver); a marker every 4 KiB says
# which file, version and offset a byte came from
# --------------------------------------------------------------------------
MARK_RE = re.compile(rb'<F(\d{4}):V(\d{3}):@(\d{10})>')
WORDS = (b'alpha beta gamma delta request served cache miss hit block index span '
         b'offset worker thread queue status upstream latency bytes sent closed').split()


def marker(fid, ver, off):
    return b'<F%04d:V%03d:@%010d>' % (fid, ver, off)   # 24 bytes


def content(seed, fid, ver, size, kind):
    rnd = random.Random(f'{seed}/{fid}/{ver}/{kind}')
    if kind == 'rand':
        buf = bytearray(rnd.randbytes(size))
    elif kind == 'zeros':   # very compressible: long runs, few literals
        buf = bytearray(size)
    else:                   # text lines
        lines = [b' '.join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 14))) + b'\n'
                 for _ in range(400)]
        buf = bytearray(b''.join(rnd.choices(lines, k=size // 40 + 1))[:size])
    for off in range(0, size - 24 + 1, 4096):
        buf[off:off + 24] = marker(fid, ver, off)
    return bytes(buf)


def xz_bytes(data, block_size=None, check='crc64'):
    argv = ['xz', '-0', '-T1', '-c', f'--check={check}']
    if block_size:
        argv.append(f'--block-size={block_size}')
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE, check=True).stdout


def zst_bytes(data, frames=1):
    """zstd frames (content size and checksum in each), concatenated as pzstd does."""
    step = -(-len(data) // max(frames, 1)) or 1
    return b''.join(subprocess.run(['zstd', '-q', '-3', '-c'], input=data[i:i + step],
                                   stdout=subprocess.PIPE, check=True).stdout
                    for i in range(0, max(len(data), 1), step))


def gz_member(data, level=6, mem_level=8):
    co = zlib.compressobj(level, zlib.DEFLATED, 31, mem_level)
    return co.compress(data) + co.flush(zlib.Z_FINISH)


def gz_bytes(data, members=1, level=6):
    if members <= 1:
        return gz_member(data, level)
    step = -(-len(data) // members)
    return b''.join(gz_member(data[i:i + step], level) for i in range(0, len(data), step))


def deflate_one_block(data):
    """One gzip member whose deflate stream is (for this data) one block.

    zlib ends a block when its symbol buffer (lit_bufsize = 1 << (memLevel+6)
    = 32 Ki symbols at memLevel 9) fills; zeros with a marker every 4 KiB take
    about 4096/258 + 24 = 40 symbols per 4 KiB, so up to ~3 MiB fit in one."""
    co = zlib.compressobj(9, zlib.DEFLATED, 31, 9)
    return co.compress(data) + co.flush(zlib.Z_FINISH)


def pieces(data, n, empty_every=0):
    """DATA cut into N pieces, with an empty piece before every EMPTY_EVERY-th."""
    step = -(-len(data) // max(n, 1)) or 1
    out = []
    for i, off in enumerate(range(0, max(len(data), 1), step)):
        if empty_every and i % empty_every == 0:
            out.append(b'')
        out.append(data[off:off + step])
    return out


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def le32(n):
    return n.to_bytes(4, 'little')


def pad4(b):
    return b + bytes(-len(b) % 4)


def xz_blocks(parts):
    """One xz Stream with one Block per part, empty parts included (an honest
    empty Block: LZMA2's end marker alone).  xz itself never writes one; the
    Index then records 0 uncompressed bytes for it.  Check: CRC32."""
    dict_prop = 22                  # 8 MiB: (2 | 0) << (22 / 2 + 11)
    hdr_body = pad4(bytes([0, 0x00, 0x21, 1, dict_prop]))
    hdr_body = bytes([(len(hdr_body) + 4) // 4 - 1]) + hdr_body[1:]
    hdr = hdr_body + le32(zlib.crc32(hdr_body))
    flags = bytes([0, 1])
    out = [b'\xfd7zXZ\x00', flags, le32(zlib.crc32(flags))]
    recs = []
    for part in parts:
        comp = lzma.compress(part, format=lzma.FORMAT_RAW,
                             filters=[dict(id=lzma.FILTER_LZMA2, preset=0, dict_size=8 * MiB)])
        out += [hdr, pad4(comp), le32(zlib.crc32(part))]
        recs.append((len(hdr) + len(comp) + 4, len(part)))
    index = pad4(b'\x00' + varint(len(recs)) + b''.join(varint(u) + varint(n) for u, n in recs))
    index += le32(zlib.crc32(index))
    back = le32(len(index) // 4 - 1) + flags
    out += [index, le32(zlib.crc32(back)), back, b'YZ']
    return b''.join(out)


def zst_raw_frame(part):
    """One zstd frame of Raw blocks, without Frame_Content_Size or checksum,
    so zmount must measure it (an empty part is one empty last block)."""
    out = [b'\x28\xb5\x2f\xfd', b'\x00', bytes([(20 - 10) << 3])]  # 1 MiB window
    chunks = [part[i:i + 65536] for i in range(0, len(part), 65536)] or [b'']
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        out += [(len(c) << 3 | last).to_bytes(3, 'little'), c]
    return b''.join(out)


def zst_seekable(data, frames):
    """zstd frames without a stated size, then a seek table (the seekable
    format's skippable frame) whose decompressed sizes lie: a seek table is a
    hint, the frames are the truth (zstd -dc ignores the table)."""
    parts = pieces(data, frames)
    fr = [zst_bytes(p) for p in parts]
    ents = b''.join(le32(len(f)) + le32(len(p) + 100 * (i % 2 == 0))
                    for i, (f, p) in enumerate(zip(fr, parts)))
    body = ents + le32(len(fr)) + b'\x00' + le32(0x8F92EAB1)
    return b''.join(fr) + le32(0x184D2A5E) + le32(len(body)) + body


def encode(spec, data):
    """The source bytes of one version of file SPEC holding DATA."""
    fmt = spec['fmt']
    lay = spec.get('layout')
    if lay == 'xz_empty_blocks':
        return xz_blocks(pieces(data, spec['frames'], 2))
    if lay == 'zst_raw_frames':
        return b''.join(zst_raw_frame(p) for p in pieces(data, spec['frames'], 3))
    if lay == 'zst_seek':
        return zst_seekable(data, spec['frames'])
    if fmt == 'xz':
        return xz_bytes(data, spec.get('block'))
    if fmt == 'zst':
        return zst_bytes(data, spec.get('frames', 1))
    if fmt == 'gz':
        if spec.get('deflate1'):
            return deflate_one_block(data)
        return gz_bytes(data, spec.get('members', 1), spec.get('level', 6))
    return data


def src_name(spec):
    """The file in SRC (a tar member's: its tar's)."""
    if spec['fmt'] == 'tarm':
        return spec['tar']
    return spec['path'] + {'xz': '.xz', 'gz': '.gz', 'zst': '.zst', 'plain': ''}[spec['fmt']]


# --------------------------------------------------------------------------
# the plan: files, mutations, worker ops -- all from the seed
# --------------------------------------------------------------------------
def make_files(rnd, scale, depth=None):
    """The file specs of one tree.  Sizes are scaled by SCALE."""
    def sz(n):
        return max(4096, int(n * scale))
    d = rnd.randint(200, 400)
    depth = depth or d
    deep = '/'.join(['d'] * depth)
    files = [
        dict(path='xz_one', fmt='xz', kind='text', size=sz(3 * MiB)),
        dict(path='xz_many', fmt='xz', kind='text', size=sz(4 * MiB), block=256 * KiB),
        dict(path='xz_big', fmt='xz', kind='text', size=sz(7 * MiB), block=3 * MiB),
        dict(path='xz_tiny', fmt='xz', kind='text', size=sz(192 * KiB), block=1 * KiB),
        # twins: one Block each, the same layout, so a decoder reading the other
        # one's descriptor would decode it without an error until the Check
        dict(path='xz_twin_a', fmt='xz', kind='rand', size=sz(2560 * KiB)),
        dict(path='xz_twin_b', fmt='xz', kind='rand', size=sz(2560 * KiB)),
        dict(path='xz_rw', fmt='xz', kind='rand', size=sz(2 * MiB), block=512 * KiB),
        dict(path='gz_one', fmt='gz', kind='text', size=sz(3 * MiB)),
        dict(path='zst_one', fmt='zst', kind='text', size=sz(3 * MiB)),
        # one Block / one frame of a few MiB: checkpoints under span=64K, and each is
        # mutated at least once (CK_FILES in make_mutations)
        dict(path='xz_ck', fmt='xz', kind='text', size=sz(2 * MiB)),
        dict(path='zst_ck', fmt='zst', kind='text', size=sz(2 * MiB)),
        dict(path='zst_frames', fmt='zst', kind='text', size=sz(4 * MiB), frames=4),
        dict(path='zst_rw', fmt='zst', kind='rand', size=sz(1 * MiB), frames=2),
        # layouts that are honest but claim sizes only the data can confirm:
        # a lying seek table, empty xz Blocks and zstd frames among full ones,
        # and many frames whose sizes come from index_dir (saved before mounting)
        dict(path='zst_seek', fmt='zst', kind='text', size=sz(768 * KiB), frames=5,
             layout='zst_seek'),
        dict(path='xz_empty', fmt='xz', kind='text', size=sz(512 * KiB), frames=9,
             layout='xz_empty_blocks'),
        dict(path='zst_saved', fmt='zst', kind='text', size=sz(1 * MiB), frames=1200,
             layout='zst_raw_frames'),
        dict(path='gz_many', fmt='gz', kind='text', size=sz(4 * MiB), members=8),
        dict(path='gz_deflate1', fmt='gz', kind='zeros', size=sz(3 * MiB), deflate1=True),
        dict(path='gz_rw', fmt='gz', kind='rand', size=sz(1 * MiB), members=2, level=0),
        dict(path='plain_text', fmt='plain', kind='text', size=sz(1 * MiB)),
        dict(path='plain_fifo', fmt='plain', kind='rand', size=sz(300 * KiB)),
        dict(path='sp ace/new\nline', fmt='gz', kind='text', size=sz(512 * KiB), members=3),
        dict(path='sp ace/a b', fmt='xz', kind='text', size=sz(640 * KiB), block=64 * KiB),
        dict(path='swapdir/inner', fmt='xz', kind='text', size=sz(1 * MiB), block=128 * KiB),
        dict(path='swapdir/plain', fmt='plain', kind='text', size=sz(200 * KiB)),
        dict(path=deep + '/bottom', fmt='xz', kind='text', size=sz(256 * KiB), block=32 * KiB),
        # members of compressed tars (-o tar, issue 34): shown under x.tar/, read through
        # the tar's reader; the tars are never changed (make_mutations leaves them out)
        dict(path='bundle.tar/logs/a.log', fmt='tarm', tar='bundle.tar.gz', kind='text',
             size=sz(1536 * KiB)),
        dict(path='bundle.tar/logs/b.bin', fmt='tarm', tar='bundle.tar.gz', kind='rand',
             size=sz(300 * KiB)),
        dict(path='bundle.tar/c.log', fmt='tarm', tar='bundle.tar.gz', kind='text',
             size=sz(700 * KiB)),
        dict(path='one.tar/big.log', fmt='tarm', tar='one.tar.xz', kind='text', size=sz(2 * MiB)),
        dict(path='one.tar/small.log', fmt='tarm', tar='one.tar.xz', kind='text',
             size=sz(64 * KiB)),
    ]
    for i, f in enumerate(files):
        f['fid'] = i
    return files


# the mutations that change an archive's bytes under an open handle; after
# the others (rename over, delete, directory moved away) the handle reads on
IN_PLACE = ('rewrite_mtime', 'truncate', 'append')
CK_FILES = ('xz_ck', 'zst_ck')
MUTATIONS = ('replace', 'rewrite_mtime', 'truncate', 'append', 'delete', 'rewrite_mtime')
ALL_MUTATIONS = MUTATIONS[:5] + ('fifo', 'dirswap')
# An object store has no FIFOs or symlinks: --s3 leaves these kinds out.
NO_S3 = ('fifo', 'dirswap')


def make_mutations(rnd, files, duration, n, kinds_on=ALL_MUTATIONS):
    """A timed list of mutations; each creates the next version of its file(s).

    KINDS_ON: which kinds may appear (all by default; --muts narrows it)."""
    muts = []
    alive = {f['fid'] for f in files}
    nver = {f['fid']: 0 for f in files}
    by = {f['path']: f for f in files}
    special = [('fifo', by['plain_fifo']['fid']), ('dirswap', 'swapdir')]
    plain_kinds = []
    pool = [k for k in MUTATIONS if k in kinds_on]
    for _ in range(n if pool else 0):
        plain_kinds.append(rnd.choice(pool))
    special = [sp for sp in special if sp[0] in kinds_on]
    # the FIFO swap and the directory swap happen once each, at a random point
    kinds = plain_kinds
    for sp in special:
        kinds.insert(rnd.randint(len(kinds) // 3, len(kinds)), sp)
    t = 0.0
    step = duration / (len(kinds) + 1)
    for k in kinds:
        t += step * rnd.uniform(0.5, 1.5)
        if isinstance(k, tuple) and k[0] == 'fifo':
            fid = k[1]
            if fid not in alive:
                continue
            nver[fid] += 1
            muts.append(dict(t=round(t, 3), kind='fifo', fid=fid, ver=nver[fid]))
            alive.discard(fid)
            continue
        if isinstance(k, tuple) and k[0] == 'dirswap':
            under = [f['fid'] for f in files if f['path'].startswith('swapdir/')]
            vers = {}
            for fid in under:
                nver[fid] += 1
                vers[fid] = nver[fid]
                alive.discard(fid)
            muts.append(dict(t=round(t, 3), kind='dirswap', dir='swapdir',
                             vers={str(a): b for a, b in vers.items()}))
            continue
        cands = sorted(fid for fid in alive
                       if not files[fid]['path'].startswith('swapdir/')
                       and files[fid]['path'] != 'plain_fifo' and files[fid]['fmt'] != 'tarm')
        if k == 'delete':
            # deleting is final for that file; keep most files alive
            cands = [c for c in cands if not files[c]['path'].startswith(('xz_one', 'xz_many'))]
        if k == 'rewrite_mtime':
            # the same size and Block layout: the '_rw' files (incompressible data)
            cands = [c for c in cands if files[c]['path'].endswith('_rw')
                     or files[c]['fmt'] == 'plain']
        if not cands:
            continue
        fid = rnd.choice(cands)
        nver[fid] += 1
        m = dict(t=round(t, 3), kind=k, fid=fid, ver=nver[fid])
        if k == 'delete':
            alive.discard(fid)
        muts.append(m)
    # the checkpointed files get a new version each: in place (truncate or
    # append) or by rename, so a handle may see its set go stale
    for path in CK_FILES:
        fid = by[path]['fid']
        kinds = [x for x in ('truncate', 'append', 'replace') if x in kinds_on]
        if kinds and fid in alive and not any(m.get('fid') == fid for m in muts):
            k = rnd.choice(kinds)
            nver[fid] += 1
            muts.append(dict(t=round(rnd.uniform(duration * 0.3, duration), 3), kind=k, fid=fid,
                             ver=nver[fid]))
    muts.sort(key=lambda m: m['t'])
    return muts


def make_ops(rnd, files, maxsize, nops, few):
    """One worker's ops.  Handle ids are the worker's own; paths by fid.

    A worker has a style: 'few' keeps at most 2 handles and closes often (so
    an archive's last handle closes and it is opened again), 'many' holds
    up to 3 per file (bursts of more handles than files happen in both)."""
    cap = 2 if few else 3 * len(files)
    p_open, p_close = (0.2, 0.4) if few else (0.15, 0.27)
    ops = []
    open_h = {}          # h -> [fid, next sequential offset]
    nexth = 0
    fids = [f['fid'] for f in files]
    lens = (1, 512, 4096, 4096, 65536, 131072, 1 * MiB, None)
    while len(ops) < nops:
        r = rnd.random()
        burst = rnd.random() < 0.004
        if burst:
            # more handles open at once than there are files
            for _ in range(len(fids) + rnd.randint(1, len(fids))):
                fid = rnd.choice(fids)
                ops.append(dict(op='open', h=nexth, fid=fid, direct=rnd.random() < 0.5))
                open_h[nexth] = [fid, 0]
                nexth += 1
            continue
        if not open_h or r < p_open:
            if len(open_h) >= cap:
                h = rnd.choice(sorted(open_h))
                ops.append(dict(op='close', h=h))
                del open_h[h]
                continue
            fid = rnd.choice(fids)
            ops.append(dict(op='open', h=nexth, fid=fid, direct=rnd.random() < 0.5))
            open_h[nexth] = [fid, 0]
            nexth += 1
        elif r < p_close:
            h = rnd.choice(sorted(open_h))
            ops.append(dict(op='close', h=h))
            del open_h[h]
        elif r < p_close + 0.02:
            ops.append(dict(op='ls', fid=rnd.choice(fids)))
        else:
            h = rnd.choice(sorted(open_h))
            fid, nxt = open_h[h]
            size = maxsize[fid]
            n = rnd.choice(lens) or rnd.randint(1, 300000)
            q = rnd.random()
            if q < 0.3:
                off = nxt
            elif q < 0.4:
                off = 0
            elif q < 0.5:
                off = max(0, size - rnd.randint(0, n + 8192))
            else:
                off = rnd.randrange(0, size + 8192)
            ops.append(dict(op='pread', h=h, off=off, len=n))
            open_h[h][1] = off + n
    for h in sorted(open_h):
        ops.append(dict(op='close', h=h))
    return ops


def make_plan(seed, args):
    rnd = random.Random(seed)
    opts, extra = MATRIX[seed % len(MATRIX)]
    if args.opts is not None:
        opts, extra = args.opts, (['-s'] if args.sflag else [])
    files = make_files(rnd, args.scale, args.depth)
    duration = args.seconds
    kinds = args.muts.split(',')
    if args.s3:
        kinds = [k for k in kinds if k not in NO_S3]
    muts = make_mutations(rnd, files, duration * 0.8, rnd.randint(6, 10), kinds)
    # version sizes are needed for offsets; compute them from the plan
    maxsize = {f['fid']: f['size'] for f in files}
    for m in muts:
        if m['kind'] in ('replace', 'append', 'rewrite_mtime', 'truncate'):
            f = files[m['fid']]
            maxsize[f['fid']] = max(maxsize[f['fid']], f['size'] * 2)
    # time-bound: enough ops for the time (workers stop at it); a long run is many runs
    # (about 1500 ops a second per worker: at cache_size=256M a worker may run out
    # of ops before the time is up; generating more costs more time up front)
    nops = args.ops if args.ops else int(min(100000, max(3000, duration * 1500)))
    workers = []
    style = rnd.choice(('few', 'many', 'mixed'))
    for w in range(args.workers):
        wr = random.Random(f'{seed}/w{w}')
        few = style == 'few' or (style == 'mixed' and w % 2 == 0)
        workers.append(make_ops(wr, files, maxsize, nops, few))
    return dict(seed=seed, opts=opts, extra=extra, files=files, muts=muts, style=style,
                workers=workers, seconds=duration, scale=args.scale, s3=bool(args.s3))


# --------------------------------------------------------------------------
# building the tree and the model
# --------------------------------------------------------------------------
def model_path(work, fid, ver):
    return os.path.join(work, 'model', str(fid), str(ver))


def write_model(work, fid, ver, data):
    p = model_path(work, fid, ver)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    tmp = p + '.tmp'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.rename(tmp, p)   # a worker never sees half a model file


def model_versions(work, fid):
    d = os.path.join(work, 'model', str(fid))
    try:
        return sorted(int(n) for n in os.listdir(d) if n.isdigit())
    except FileNotFoundError:
        return []


def build_tree(plan, work):
    src = os.path.join(work, 'src')
    os.makedirs(src)
    seed = plan['seed']

    def one(f):
        data = content(seed, f['fid'], 0, f['size'], f['kind'])
        write_model(work, f['fid'], 0, data)
        if f['fmt'] == 'tarm':
            return
        p = os.path.join(src, src_name(f))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'wb') as fh:
            fh.write(encode(f, data))
    # xz runs as a child process: two at a time (the CI machine has 2 cores)
    with ThreadPoolExecutor(2) as ex:
        for _ in ex.map(one, sorted(plan['files'], key=lambda f: -f['size'])):
            pass
    build_tars(plan, work, src)
    # what the swapped-in symlink points at: files of the same names outside
    # SRC, with content no version has (the "EVIL" file ids 9000+)
    out = os.path.join(work, 'outside', 'swapdir')
    os.makedirs(out)
    for f in plan['files']:
        if f['path'].startswith('swapdir/'):
            data = content(seed, 9000 + f['fid'], 0, f['size'], f['kind'])
            with open(os.path.join(work, 'outside', src_name(f)), 'wb') as fh:
                fh.write(encode(f, data))
    return src


def build_tars(plan, work, src):
    """The tars of the 'tarm' files, from their version 0: GNU format, in plan order."""
    tars = {}
    for f in plan['files']:
        if f['fmt'] == 'tarm':
            tars.setdefault(f['tar'], []).append(f)
    for name, members in sorted(tars.items()):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
            for f in members:
                with open(model_path(work, f['fid'], 0), 'rb') as fh:
                    data = fh.read()
                ti = tarfile.TarInfo(f['path'].split('/', 1)[1])
                ti.size = len(data)
                ti.mtime = 1700000000
                t.addfile(ti, io.BytesIO(data))
        raw = buf.getvalue()
        with open(os.path.join(src, name), 'wb') as fh:
            fh.write(gz_bytes(raw) if name.endswith('.gz') else xz_bytes(raw))


# --------------------------------------------------------------------------
# the mutator (its own process): applies mutations at their times
# --------------------------------------------------------------------------
def new_version_data(plan, f, m, work):
    seed = plan['seed']
    prev = model_versions(work, f['fid'])
    old = open(model_path(work, f['fid'], prev[-1]), 'rb').read() if prev else b''
    k = m['kind']
    rnd = random.Random(f'{seed}/mut/{m["fid"]}/{m["ver"]}')
    if k == 'replace':
        size = max(4096, int(f['size'] * rnd.uniform(0.3, 1.8)))
        return content(seed, f['fid'], m['ver'], size, f['kind'])
    if k == 'rewrite_mtime':
        return content(seed, f['fid'], m['ver'], len(old), f['kind'])
    if k == 'truncate':
        return old[:rnd.randint(len(old) // 4, max(len(old) // 4, len(old) * 3 // 4))]
    if k == 'append':
        return old + content(seed, f['fid'], m['ver'], rnd.randint(4096, 1 * MiB), f['kind'])
    raise ValueError(k)


def old_len(work, fid, ver):
    return os.path.getsize(model_path(work, fid, ver - 1))


def apply_mutation(plan, m, work, src, log, s3=None):
    """Prepare everything, then record t_start, do the visible change, record t_end.
    With s3 (see s3_mirror), the change is then made to the object too, before t_end."""
    k = m['kind']
    rec = dict(kind=k, t=m['t'])
    if k == 'dirswap':
        d = os.path.join(src, m['dir'])
        grave = os.path.join(work, 'grave')
        os.makedirs(grave, exist_ok=True)
        rec['vers'] = m['vers']
        rec['s'] = time.monotonic()
        os.rename(d, os.path.join(grave, m['dir']))
        # from SRC: ../outside/swapdir exists (other bytes); from MNT (work/m/mnt)
        # it does not, so only a daemon that follows the link could serve them
        os.symlink('../outside/' + m['dir'], d)
        rec['e'] = time.monotonic()
        log.write(json.dumps(rec) + '\n')
        log.flush()
        return
    f = plan['files'][m['fid']]
    p = os.path.join(src, src_name(f))
    rec.update(fid=m['fid'], ver=m['ver'])
    if k == 'delete':
        rec['s'] = time.monotonic()
        os.unlink(p)
    elif k == 'fifo':
        tmp = p + '.fifo-tmp'
        os.mkfifo(tmp)
        rec['s'] = time.monotonic()
        os.rename(tmp, p)
    else:
        data = new_version_data(plan, f, m, work)
        write_model(work, m['fid'], m['ver'], data)
        if k == 'append' and f['fmt'] != 'plain':
            enc = encode(f, data[old_len(work, m['fid'], m['ver']):])
            rec['s'] = time.monotonic()
            with open(p, 'ab') as fh:     # another gzip member / another xz Stream
                fh.write(enc)
        elif k == 'append':
            n0 = old_len(work, m['fid'], m['ver'])
            rec['s'] = time.monotonic()
            with open(p, 'ab') as fh:
                fh.write(data[n0:])
        elif k == 'truncate' and f['fmt'] == 'plain':
            rec['s'] = time.monotonic()
            os.truncate(p, len(data))
        elif k == 'truncate':
            enc = encode(f, data)
            rec['s'] = time.monotonic()
            with open(p, 'r+b') as fh:    # in place: O_TRUNC and rewrite, shorter
                fh.truncate(0)
                fh.write(enc)
        elif k == 'replace':
            enc = encode(f, data)
            tmp = os.path.join(os.path.dirname(p), '.tmp-replace')
            with open(tmp, 'wb') as fh:
                fh.write(enc)
            rec['s'] = time.monotonic()
            os.rename(tmp, p)
        elif k == 'rewrite_mtime':
            enc = encode(f, data)
            st = os.stat(p)
            rec['same_size'] = len(enc) == st.st_size
            rec['s'] = time.monotonic()
            with open(p, 'r+b') as fh:    # in place, same size, then the old mtime back
                fh.write(enc)
                fh.truncate(len(enc))
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    if s3:
        s3_mirror(s3, src, p, k == 'delete')
    rec['e'] = time.monotonic()
    log.write(json.dumps(rec) + '\n')
    log.flush()


def mutator_main(plan, work, src, t_base, hb, logpath, s3=None):
    with open(logpath, 'w') as log:
        for i, m in enumerate(plan['muts']):
            delay = t_base + m['t'] - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            hb[0] = i
            try:
                apply_mutation(plan, m, work, src, log, s3)
            except Exception:
                log.write(json.dumps(dict(kind='error', t=m['t'],
                                          err=traceback.format_exc())) + '\n')
                log.flush()
    hb[2] = 1.0


# --------------------------------------------------------------------------
# --s3: the tree as objects
# --------------------------------------------------------------------------
def s3_key(s3, src, path):
    return s3['prefix'] + os.path.relpath(path, src)


def s3_mirror(s3, src, path, delete):
    """The object of PATH (under SRC) becomes what PATH now holds: one PUT
    of the whole new content (an overwrite), or a DELETE."""
    g = s3util.Gateway.from_dir(s3['dir'])
    if delete:
        g.delete(g.bucket, s3_key(s3, src, path))
    else:
        g.put(g.bucket, s3_key(s3, src, path), path=path)


def s3_upload(s3, src):
    """Every regular file under SRC as an object under s3['prefix']."""
    g = s3util.Gateway.from_dir(s3['dir'])
    items = []
    for d, _, names in os.walk(src):
        items += [(s3_key(s3, src, os.path.join(d, n)), os.path.join(d, n)) for n in names
                  if stat.S_ISREG(os.lstat(os.path.join(d, n)).st_mode)]
    g.put_many(g.bucket, items, parallel=8)
    return g


# --------------------------------------------------------------------------
# a worker (its own process): runs its op list against the mount
# --------------------------------------------------------------------------
def match_versions(work, fid, off, n, data, cache):
    """The versions of FID whose N bytes at OFF are exactly DATA (short only at EOF)."""
    got = []
    for v in model_versions(work, fid):
        key = (fid, v)
        if key not in cache:
            with open(model_path(work, fid, v), 'rb') as f:
                cache[key] = f.read()
        if cache[key][off:off + n] == data:
            got.append(v)
    return got


def page_versions(work, fid, off, data, cache):
    """For each file page DATA covers (4 KiB, aligned in the file), the versions it matches."""
    out = []
    a = 0
    while a < len(data):
        b = min(len(data), (off + a) // 4096 * 4096 + 4096 - off)
        out.append([v for v in model_versions(work, fid)
                    if cache[(fid, v)][off + a:off + b] == data[a:b]])
        a = b
    return out


def explain(work, fid, off, n, data, cache):
    """Which version each 4 KiB piece of DATA matches, as runs; and a short read."""
    vs = model_versions(work, fid)
    want = {v: cache[(fid, v)][off:off + n] for v in vs if (fid, v) in cache}
    notes = []
    for v, w in want.items():
        if len(data) < len(w) and w[:len(data)] == data:
            notes.append(f'a SHORT READ: {len(data)} of the {len(w)} bytes version {v} has there')
    runs = []
    step = 4096
    for a in range(0, len(data), step):
        piece = data[a:a + step]
        who = ','.join(f'v{v}' for v, w in want.items() if w[a:a + len(piece)] == piece) or 'none'
        if runs and runs[-1][2] == who:
            runs[-1][1] = a + len(piece)
        else:
            runs.append([a, a + len(piece), who])
    desc = ' '.join(f'[+{a}..+{b}: {who}]' for a, b, who in runs[:8])
    if len(runs) > 8:
        desc += f' ... ({len(runs)} runs)'
    return '; '.join(notes + [f'{len(data)} bytes by 4 KiB piece: {desc}'])


def diagnose(data, fid, off):
    """Where the wrong bytes came from, from the markers they carry."""
    seen = []
    for mm in MARK_RE.finditer(data):
        seen.append((int(mm.group(1)), int(mm.group(2)), int(mm.group(3)), mm.start()))
        if len(seen) >= 4:
            break
    if not seen:
        return 'no marker in the bytes read'
    parts = []
    for f2, v2, o2, at in seen:
        what = 'other FILE' if f2 != fid else 'this file'
        if f2 >= 9000:
            what = 'the file OUTSIDE SRC behind the swapped symlink'
        parts.append(f'at +{at}: marker of fid {f2} v{v2} @{o2} ({what}; expected @{off + at})')
    return '; '.join(parts)


def worker_main(wid, plan, work, mnt, t_stop, hb, logpath):
    files = plan['files']
    cache = {}
    handles = {}
    log = open(logpath, 'w')

    def emit(rec):
        log.write(json.dumps(rec) + '\n')

    for i, op in enumerate(plan['workers'][wid]):
        if time.monotonic() > t_stop:
            break
        hb[0] = i
        t0 = time.monotonic()
        hb[1] = t0
        rec = dict(i=i, op=op['op'], t0=t0)
        try:
            if op['op'] == 'open':
                f = files[op['fid']]
                rec.update(h=op['h'], fid=op['fid'])
                flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
                if op['direct']:
                    flags |= os.O_DIRECT
                try:
                    fd = os.open(os.path.join(mnt, f['path']), flags)
                    st = os.fstat(fd)
                    if stat.S_ISFIFO(st.st_mode):
                        rec['type'] = 'fifo'
                    elif not stat.S_ISREG(st.st_mode):
                        rec['type'] = 'other'
                    handles[op['h']] = (fd, op['fid'], rec.get('type'))
                except OSError as e:
                    rec['err'] = errno.errorcode.get(e.errno, str(e.errno))
            elif op['op'] == 'close':
                rec['h'] = op['h']
                hd = handles.pop(op['h'], None)
                if hd is not None:
                    os.close(hd[0])
                else:
                    rec['skip'] = True
            elif op['op'] == 'ls':
                d = os.path.dirname(os.path.join(mnt, files[op['fid']]['path']))
                try:
                    os.listdir(d)
                except OSError as e:
                    rec['err'] = errno.errorcode.get(e.errno, str(e.errno))
            elif op['op'] == 'pread':
                rec.update(h=op['h'], off=op['off'], len=op['len'])
                hd = handles.get(op['h'])
                if hd is None or hd[2] is not None:
                    rec['skip'] = True
                else:
                    fd, fid, _ = hd
                    rec['fid'] = fid
                    try:
                        data = os.pread(fd, op['len'], op['off'])
                        rec['n'] = len(data)
                        mv = match_versions(work, fid, op['off'], op['len'], data, cache)
                        rec['match'] = mv
                        if not mv and files[fid]['fmt'] == 'plain':
                            rec['pages'] = page_versions(work, fid, op['off'], data, cache)
                        if not mv:
                            rec['prefix_of'] = [v for v in model_versions(work, fid)
                                                if len(cache[(fid, v)][op['off']:op['off'] + op['len']])
                                                > len(data) and cache[(fid, v)][op['off']:
                                                op['off'] + len(data)] == data]
                            rec['diag'] = (explain(work, fid, op['off'], op['len'], data, cache)
                                           + '; ' + diagnose(data, fid, op['off']))
                            bad = os.path.join(work, f'bad-w{wid}-{i}.bin')
                            with open(bad, 'wb') as bf:
                                bf.write(data)
                    except OSError as e:
                        rec['err'] = errno.errorcode.get(e.errno, str(e.errno))
        except Exception:
            rec['exc'] = traceback.format_exc()
        rec['t1'] = time.monotonic()
        hb[1] = 0.0
        emit(rec)
    for fd, _, _ in handles.values():
        try:
            os.close(fd)
        except OSError:
            pass
    log.close()
    hb[2] = 1.0


# --------------------------------------------------------------------------
# the daemon: hangs, memory
# --------------------------------------------------------------------------
def dump_threads(pid):
    out = []
    try:
        tids = sorted(os.listdir(f'/proc/{pid}/task'), key=int)
    except OSError as e:
        return f'(cannot list /proc/{pid}/task: {e})'
    for tid in tids:
        base = f'/proc/{pid}/task/{tid}'
        try:
            with open(base + '/stat') as f:
                st = f.read().split(') ')[-1].split()[0]
            with open(base + '/comm') as f:
                comm = f.read().strip()
            with open(base + '/wchan') as f:
                wchan = f.read().strip()
        except OSError:
            st, comm, wchan = '?', '?', '?'
        out.append(f'  thread {tid} {comm} state {st} wchan {wchan}')
        try:
            with open(base + '/stack') as f:
                out += ['    ' + ln.rstrip() for ln in f if ln.strip()]
        except OSError as e:
            out.append(f'    (stack not readable: {e.strerror})')
    gdb = shutil.which('gdb')
    if gdb:
        # the user-space side: which lock each thread waits on
        try:
            p = subprocess.run([gdb, '-p', str(pid), '-batch', '-nx', '-ex', 'thread apply all bt'],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=60)
            bt = [ln for ln in p.stdout.decode(errors='replace').splitlines()
                  if ln.startswith(('Thread ', '#'))]
            out.append('  gdb backtraces:')
            out += ['    ' + ln[:200] for ln in bt]
        except subprocess.TimeoutExpired:
            out.append('  (gdb timed out)')
    return '\n'.join(out)


def ck_counts(plan, mnt):
    """(checkpoints, resumes) summed over the archives in the mount now, from
    user.zmount.info: resumes= counts reads whose decoder started at a
    checkpoint, so a run with span=64K shows they were exercised."""
    total = [0, 0]
    for f in plan['files']:
        if f['fmt'] == 'plain':
            continue
        try:
            raw = os.getxattr(os.path.join(mnt, f['path']), 'user.zmount.info').decode()
        except OSError:
            continue    # deleted, swapped away, or a FIFO now
        for i, key in enumerate(('checkpoints', 'resumes')):
            m = re.search(rf'^{key}=(\d+)$', raw, re.M)
            total[i] += int(m.group(1)) if m else 0
    return tuple(total)


def fuse_conn_abort(mnt):
    """Abort our own mount's FUSE connection (by its device number)."""
    want = os.path.realpath(mnt)
    try:
        for e in zmtest.mountinfo():
            if e.mnt == want:
                with open(f'/sys/fs/fuse/connections/{e.dev.split(":")[1]}/abort', 'w') as a:
                    a.write('1')
                return True
    except OSError:
        pass
    return False


# --------------------------------------------------------------------------
# checking the logs against the model's timeline
# --------------------------------------------------------------------------
class Timeline:
    def __init__(self, plan, mutlog):
        self.vers = {f['fid']: [dict(ver=0, kind='data', s=-1e18, e=-1e18)]
                     for f in plan['files']}
        self.errors = []
        self.same_size_rewrites = 0
        for rec in mutlog:
            if rec['kind'] == 'error':
                self.errors.append(rec['err'])
                continue
            if rec['kind'] == 'dirswap':
                for fid, v in rec['vers'].items():
                    self.vers[int(fid)].append(dict(ver=v, kind='absent', s=rec['s'], e=rec['e'],
                                                    how='dirswap'))
                continue
            kind = {'delete': 'absent', 'fifo': 'fifo'}.get(rec['kind'], 'data')
            if rec.get('same_size'):
                self.same_size_rewrites += 1
            self.vers[rec['fid']].append(dict(ver=rec['ver'], kind=kind, s=rec['s'], e=rec['e'],
                                              how=rec['kind']))

    def valid_during(self, fid, a, b):
        """Versions that may be what the kernel shows at some time in [a, b]."""
        vs = self.vers[fid]
        out = []
        for j, v in enumerate(vs):
            end = vs[j + 1]['e'] + ATTR_TIMEOUT + SLACK if j + 1 < len(vs) else 1e18
            if v['s'] <= b and end >= a:
                out.append(v)
        return out

    def changing(self, fid, a, b):
        """A mutation of FID that may be in effect in [a, b]?"""
        return any(v['s'] <= b and v['e'] + ATTR_TIMEOUT + SLACK >= a
                   for v in self.vers[fid][1:])

    def changed_after(self, fid, a, b, kinds=None):
        return any(v['s'] <= b and v['e'] >= a - ATTR_TIMEOUT - SLACK
                   and (kinds is None or v['how'] in kinds) for v in self.vers[fid][1:])


def check_logs(plan, work, tl, res, label, cutoff=1e18):
    """Returns a list of (class, text) failures."""
    fails = []
    files = plan['files']
    nreads = nok = neio = nopen = ntar = 0
    first_t = 1e18 if cutoff >= 1e18 else cutoff   # when the first failure was seen
    allrecs = {}
    for w in range(len(plan['workers'])):
        nfails = len(fails)
        prev_t1 = 0.0
        p = os.path.join(work, f'w{w}.log')
        if not os.path.exists(p):
            continue
        handles = {}
        with open(p) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
        allrecs[w] = recs
        for r in recs:
            if r['t1'] > cutoff:    # after a hang or a crash: consequences, not causes
                break
            if len(fails) > nfails:
                first_t = min(first_t, prev_t1)
            nfails = len(fails)
            prev_t1 = r['t1']
            if 'exc' in r:
                fails.append(('exception', f'w{w} op {r["i"]}: {r["exc"]}'))
                continue
            if r['op'] == 'open':
                nopen += 1
                fid = r['fid']
                valid = tl.valid_during(fid, r['t0'], r['t1'])
                if 'err' in r:
                    if r['err'] == 'ENOTCONN':
                        fails.append(('daemon gone', f'w{w} op {r["i"]} open {short(files[fid]["path"])!r}: ENOTCONN'))
                    # (EINVAL: O_DIRECT on a FIFO, refused by the kernel itself)
                    elif r['err'] in ('ENOENT', 'ESTALE', 'EIO', 'ELOOP', 'ENOTDIR', 'EACCES',
                                      'EINVAL') and (
                            tl.changing(fid, r['t0'], r['t1'])
                            or any(v['kind'] != 'data' for v in valid)):
                        pass
                    else:
                        fails.append(('bad open error', f'w{w} op {r["i"]} open '
                                      f'{short(files[fid]["path"])!r}: {r["err"]} but the file '
                                      f'was not changing (versions {[v["ver"] for v in valid]})'))
                    continue
                typ = r.get('type')
                if typ == 'fifo' and not any(v['kind'] == 'fifo' for v in valid):
                    fails.append(('wrong type', f'w{w} op {r["i"]}: {short(files[fid]["path"])!r} opened as a FIFO'))
                allowed = {v['ver'] for v in valid if v['kind'] == 'data'}
                handles[r['h']] = dict(fid=fid, t0=r['t0'], allowed=allowed, seen=None,
                                       typ=typ, first=None)
            elif r['op'] == 'pread' and not r.get('skip'):
                nreads += 1
                h = handles.get(r['h'])
                if h is None:
                    continue
                fid = h['fid']
                path = short(files[fid]['path'])
                where = f'w{w} op {r["i"]} pread(h{r["h"]} {path!r}, off={r["off"]}, len={r["len"]})'
                if 'err' in r:
                    if r['err'] == 'ENOTCONN':
                        fails.append(('daemon gone', where + ': ENOTCONN'))
                    elif r['err'] in ('EIO', 'ESTALE', 'ENOENT') and tl.changed_after(
                            fid, h['t0'], r['t1'],
                            None if files[fid]['fmt'] == 'plain' or plan.get('s3')
                            else IN_PLACE):
                        neio += 1
                    else:
                        # an archive renamed over, deleted or moved away keeps
                        # its bytes: only a change in place may fail a handle
                        # (over S3 any overwrite or DELETE may: the object is gone)
                        fails.append(('bad read error', f'{where}: {r["err"]}, and {path!r} was not '
                                      f'changed in place during the handle\'s life'))
                    continue
                m = set(r['match'])
                pre = set(r.get('prefix_of', ())) & h['allowed']
                if (not m and pre and (r['off'] + r['n']) % 4096 == 0
                        and tl.changed_after(fid, h['t0'], r['t1'])):
                    # README: a read in flight when the file is changed in place may
                    # return the old bytes up to a page boundary and then fail
                    neio += 1
                    continue
                if (not m and files[fid]['fmt'] == 'plain' and r.get('pages')
                        and all(set(pv) & {v['ver'] for v in tl.valid_during(fid, h['t0'], r['t1'])}
                                for pv in r['pages'])):
                    # a plain file is passed through, with the kernel's page cache: a
                    # handle open across an in-place rewrite may get pages of either
                    # version (README), each page whole
                    neio += 1
                    continue
                if not m and files[fid]['fmt'] == 'plain' and tl.changing(fid, r['t0'], r['t1']):
                    # a plain file is read through: a read that overlaps an in-place
                    # write may see part of each, as on any file system
                    neio += 1
                    continue
                if not m:
                    cls = 'short read' if 'SHORT READ' in (r.get('diag') or '') else 'wrong bytes'
                    fails.append((cls, f'{where}: {r["n"]} bytes that are no version '
                                  f'of the file; {r.get("diag")}'))
                    continue
                allowed = h['allowed']
                if files[fid]['fmt'] == 'plain':   # passed through: the file as it is now
                    allowed = {v['ver'] for v in tl.valid_during(fid, h['t0'], r['t1'])
                               if v['kind'] == 'data'}
                ok = m & allowed
                if not ok and h['seen'] is not None and files[fid]['fmt'] != 'plain':
                    fails.append(('mixed versions', f'{where}: bytes of version(s) {sorted(m)}, '
                                  f'but this handle read version(s) {sorted(h["seen"])} before '
                                  f'(op {h["first"]}), and only {sorted(allowed)} were current '
                                  f'while it was opened'))
                    continue
                if not ok:
                    fails.append(('stale/future version', f'{where}: bytes of version(s) '
                                  f'{sorted(m)}, but only {sorted(allowed)} were current '
                                  f'while the handle was opened'))
                    continue
                if files[fid]['fmt'] != 'plain':   # a plain file is passed through: no snapshot
                    if h['seen'] is None:
                        h['seen'] = ok
                        h['first'] = r['i']
                    else:
                        both = h['seen'] & ok
                        if not both:
                            fails.append(('mixed versions', f'{where}: bytes of version(s) '
                                          f'{sorted(ok)}, but this handle read version(s) '
                                          f'{sorted(h["seen"])} before (op {h["first"]})'))
                        else:
                            h['seen'] = both
                nok += 1
                ntar += files[fid]['fmt'] == 'tarm'
            elif r['op'] == 'close':
                handles.pop(r['h'], None)
            elif r['op'] == 'ls' and r.get('err') == 'ENOTCONN':
                fails.append(('daemon gone', f'w{w} op {r["i"]} ls: ENOTCONN'))
        if len(fails) > nfails:
            first_t = min(first_t, prev_t1)
    res.note(f'{label}: {nopen} opens, {nreads} reads: {nok} right bytes ({ntar} of them '
             f'in tar members), {neio} allowed errors after a change')
    if (fails or cutoff < 1e18) and first_t < 1e18:
        # for --shrink: each worker's ops that started before the first failure
        cut = {w: max([r['i'] for r in recs if r['t0'] <= first_t] + [-1]) + 2
               for w, recs in allrecs.items()}
        with open(os.path.join(work, 'first_fail.json'), 'w') as f:
            json.dump(dict(t=first_t, cut=cut), f)
    return fails, nreads


# --------------------------------------------------------------------------
# one run
# --------------------------------------------------------------------------
def save_sizes(plan, args, src, idx):
    """Save the measured frame sizes of the 'zst_saved' file before mounting,
    as a remount would find them: the mount then places its frames by sizes
    that came from index_dir, which it must check before trusting."""
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(args.zmount))),
                        'tools', 'zmount-index')
    paths = [os.path.join(src, src_name(f)) for f in plan['files']
             if f.get('layout') == 'zst_raw_frames']
    subprocess.run([tool, 'build', '-q', '-d', idx] + paths, check=True)


def run_plan(plan, args, res, label, quiet=False):
    """Run PLAN once; returns (list of (class, text) failures, work dir)."""
    work = tempfile.mkdtemp(prefix=f'zmstress-{plan["seed"]}-', dir=args.workdir)
    fails = []
    say = (lambda s: None) if quiet else (lambda s: print(s, flush=True))
    t_build = time.monotonic()
    src = build_tree(plan, work)
    say(f'# {label}: tree built in {time.monotonic() - t_build:.1f} s under {work}')
    mnt = os.path.join(work, 'm', 'mnt')
    os.makedirs(mnt)
    idx = os.path.join(work, 'idx')
    os.makedirs(idx, mode=0o700)
    if not plan.get('s3'):  # (over S3 the index is keyed by the ETag: the mount measures)
        save_sizes(plan, args, src, idx)
    opts = plan['opts'] + f',index_dir={idx}'
    if not re.search(r'(^|,)tar(,|$)', opts):
        opts += ',tar'      # the 'tarm' files: no other name in the tree is a tar
    cache = cache_size_of(plan['opts'])
    hwm_bound = (args.hwm_mib * MiB) if args.hwm_mib else cache + 64 * MiB
    s3 = None
    msrc = src
    if plan.get('s3'):
        if not args.s3:
            fails.append(('mount failed', 'this plan runs over S3: give --s3 DIR'))
            return fails, work
        s3 = dict(dir=os.path.abspath(args.s3), prefix=os.path.basename(work) + '/')
        t_up = time.monotonic()
        g = s3_upload(s3, src)
        say(f'# {label}: uploaded to s3://{g.bucket}/{s3["prefix"]} in '
            f'{time.monotonic() - t_up:.1f} s')
        msrc = f's3://{g.bucket}/{s3["prefix"].rstrip("/")}'
        opts += f',endpoint={g.endpoint},region={g.region},credentials={g.credfile}'
        if not args.hwm_mib:  # each open object may hold S3SRC_BYTES_PER_SOURCE
            hwm_bound += 8 * MiB * len(plan['files'])
    nw = len(plan['workers'])
    hbs = [mp.Array('d', 3, lock=False) for _ in range(nw + 1)]
    hang = None
    hwm = 0
    crashed = None
    m = zmtest.Mount(args.zmount, msrc, mnt, opts=opts, extra_args=plan['extra'],
                     log_path=os.path.join(work, 'daemon.log'), label=label,
                     results=None, exit_timeout=30)
    procs = []
    unmount_ok = None
    unmount_detail = ''
    try:
        m.__enter__()
    except zmtest.MountError as e:
        fails.append(('mount failed', str(e)))
        return fails, work
    try:
        pid = m.proc.pid
        t_base = time.monotonic()
        t_stop = t_base + plan['seconds'] if not args.ops else t_base + 1e9
        ctx = mp.get_context('fork')
        mproc = ctx.Process(target=mutator_main, args=(plan, work, src, t_base, hbs[nw],
                                                       os.path.join(work, 'mut.log'), s3))
        mproc.start()
        procs.append(mproc)
        for w in range(nw):
            p = ctx.Process(target=worker_main, args=(w, plan, work, mnt, t_stop, hbs[w],
                                                      os.path.join(work, f'w{w}.log')))
            p.start()
            procs.append(p)
        hard_stop = t_base + plan['seconds'] + 3 * args.deadline + 60 if not args.ops else 1e18
        while True:
            time.sleep(0.2)
            now = time.monotonic()
            h = vm_hwm_kib(pid)
            if h:
                hwm = max(hwm, h * KiB)
            if m.proc.poll() is not None:
                crashed = m.proc.returncode
                break
            for w in range(nw):
                # read each shared value once: the worker clears t0 at any moment
                t0, i = hbs[w][1], int(hbs[w][0])
                if t0 and now - t0 > args.deadline:
                    hang = (w, i, plan['workers'][w][i], now - t0)
                    break
            if hang:
                break
            if all(not p.is_alive() for p in procs):
                break
            if now > hard_stop:
                hang = (-1, -1, 'the run as a whole', now - t_base)
                break
        cutoff = 1e18
        if hang or crashed is not None:
            cutoff = time.monotonic() - (hang[3] if hang else 0.5)
        if hang:
            w, i, op, dt = hang
            stacks = dump_threads(pid)
            what = ''
            if isinstance(op, dict) and 'fid' in op:
                what = f' on {short(plan["files"][op["fid"]]["path"])!r}'
            elif isinstance(op, dict) and 'h' in op:
                for o in plan['workers'][w][:i]:
                    if o['op'] == 'open' and o['h'] == op['h']:
                        what = f' on {short(plan["files"][o["fid"]]["path"])!r}'
            fails.append(('hang', f'worker {w} op {i} {op}{what} blocked for {dt:.1f} s '
                          f'(deadline {args.deadline:g} s); mutations so far: '
                          f'{mutations_so_far(work)}; daemon threads:\n{stacks}'))
        if crashed is not None:
            fails.append(('daemon died', f'the daemon exited with status {crashed} during '
                          f'the run; log tail:\n{m.log_tail(15)}'))
        if hang or crashed is not None:
            m._kill()
            fuse_conn_abort(mnt)
            zmtest.fusermount(mnt, lazy=True)
        for p in procs:
            p.join(timeout=15)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        h = vm_hwm_kib(pid)
        if h:
            hwm = max(hwm, h * KiB)
        if not hang and crashed is None:
            ckpts, resumes = ck_counts(plan, mnt)
            if not quiet:
                res.note(f'{label}: {ckpts} checkpoints in the archives at the end; '
                         f'{resumes} reads resumed at one')
            tree = sum(f['size'] for f in plan['files'])
            if (re.search(r'(^|,)span=64K(,|$)', plan['opts']) and cache < tree // 4
                    and resumes == 0):
                fails.append(('no resumes', f'span=64K, cache_size {cache // MiB} MiB, '
                              f'{ckpts} checkpoints, but no read resumed at one: the '
                              'checkpointed files were not exercised'))
            rc, msg = zmtest.fusermount(mnt)
            unmount_ok = rc == 0 and not zmtest.is_mounted(mnt)
            if not unmount_ok:
                unmount_detail = f'fusermount3 -u: rc={rc} {msg}'
                zmtest.fusermount(mnt, lazy=True)
            try:
                rc = m.proc.wait(timeout=30)
                if rc != 0:
                    unmount_ok = False
                    unmount_detail += f' daemon exit status {rc}; log tail:\n{m.log_tail(10)}'
            except subprocess.TimeoutExpired:
                unmount_ok = False
                unmount_detail += ' daemon still running 30 s after unmount:\n' + dump_threads(pid)
                m._kill()
            m._stop_timer()
            m._close_log()
            if not unmount_ok:
                fails.append(('unmount', unmount_detail))
    except BaseException:
        m._emergency()
        for p in procs:
            if p.is_alive():
                p.kill()
        raise
    if s3:
        try:
            g.empty_bucket(g.bucket, s3['prefix'])
        except s3util.S3Error as e:
            say(f'# {label}: could not delete s3://{g.bucket}/{s3["prefix"]}: {e}')
    mutlog = []
    if os.path.exists(os.path.join(work, 'mut.log')):
        with open(os.path.join(work, 'mut.log')) as f:
            mutlog = [json.loads(ln) for ln in f if ln.strip()]
    tl = Timeline(plan, mutlog)
    for e in tl.errors:
        fails.append(('mutator error', e))
    lf, nreads = check_logs(plan, work, tl, res, label, cutoff)
    fails += lf
    if hwm > hwm_bound:
        fails.append(('memory', f'daemon VmHWM {hwm / MiB:.1f} MiB > bound {hwm_bound / MiB:.0f} MiB'))
    if not quiet:
        kinds = ','.join(r['kind'] for r in mutlog)
        res.note(f'{label}: handle style {plan.get("style")}; {len(mutlog)} mutations ({kinds}); '
                 f'{tl.same_size_rewrites} same-size mtime-restoring rewrites; '
                 f'VmHWM {hwm / MiB:.1f} MiB (bound {hwm_bound / MiB:.0f} MiB)')
    if nreads == 0 and not fails:
        fails.append(('no reads', 'the run made no reads: the checker checked nothing'))
    return fails, work


def short(path):
    """A path for messages: the deep chain as d/(N levels)/name."""
    parts = path.split('/')
    if len(parts) > 6:
        return f'{parts[0]}/...({len(parts) - 2} levels).../{parts[-1]}'
    return path


def mutations_so_far(work):
    try:
        with open(os.path.join(work, 'mut.log')) as f:
            recs = [json.loads(ln) for ln in f if ln.strip()]
    except (OSError, ValueError):
        return '?'
    return ', '.join(f'{r["kind"]}' + (f'(fid {r["fid"]})' if 'fid' in r else '') for r in recs)


def fail_classes(fails):
    return sorted({c for c, _ in fails})


def report(plan, fails, work, res, label, args):
    classes = fail_classes(fails)
    names = {
        'hang': 'no op exceeds its deadline (no hang)',
        'daemon died': 'the daemon stays alive',
        'wrong bytes': 'every read returns bytes of some version of its file',
        'short read': 'no short read before EOF',
        'stale/future version': 'every read returns a version current when its handle was opened',
        'mixed versions': 'one handle never returns bytes of two versions',
        'bad read error': 'no read error unless the file changed',
        'bad open error': 'no open error unless the file changed',
        'memory': 'daemon VmHWM within the bound',
        'unmount': 'fusermount3 -u works and the daemon exits 0',
    }
    cut_short = 'hang' in classes or 'daemon died' in classes
    for c, name in names.items():
        these = [t for cc, t in fails if cc == c]
        if c == 'unmount' and cut_short and not these:
            res.note(f'{label}: unmount not tried: the daemon was killed after the hang/crash')
            continue
        if these:
            more = f'\n    ... and {len(these) - 8} more' if len(these) > 8 else ''
            res.fail(f'{label}: {name}',
                     f'{len(these)} failure(s):\n    ' + '\n    '.join(these[:8]) + more)
        else:
            res.ok(f'{label}: {name}')
    for c in classes:
        if c not in names:
            for t in [t for cc, t in fails if cc == c][:5]:
                res.fail(f'{label}: {c}', t)
    if fails:
        # the replay holds the ops that ran (and the one that hung), not the unused rest
        trimmed = []
        for w, ops in enumerate(plan['workers']):
            last = -1
            try:
                with open(os.path.join(work, f'w{w}.log')) as f:
                    for ln in f:
                        if ln.strip():
                            last = json.loads(ln)['i']
            except (OSError, ValueError):
                last = len(ops)
            trimmed.append(ops[:last + 2])
        rp = os.path.join(work, 'replay.json')
        with open(rp, 'w') as f:
            json.dump(dict(plan, workers=trimmed), f)
        print(f'# FAILED: seed {plan["seed"]}, options "{plan["opts"]}" {" ".join(plan["extra"])}'
              f' -- work dir: {work} (logs and replay; the trees too with --keep)\n# replay: {sys.argv[0]} --zmount {args.zmount} '
              f'--replay {rp}' + (f' --s3 {args.s3}' if plan.get('s3') else '')
              + ' [--shrink]', flush=True)
    return classes


# --------------------------------------------------------------------------
# shrinking: drop halves of the op lists while the same failure class stays
# --------------------------------------------------------------------------
def handle_units(ops):
    """Groups of op indexes that stand or fall together (all ops of one handle)."""
    units = {}
    for i, op in enumerate(ops):
        key = ('h', op['h']) if 'h' in op else ('i', i)
        units.setdefault(key, []).append(i)
    return list(units.values())


def shrink(plan, args, want, work0):
    res = zmtest.Results()
    tries = 0
    best = plan

    def fails_same(p):
        nonlocal tries
        tries += 1
        f, work = run_plan(p, args, res, f'shrink try {tries}', quiet=True)
        same = bool(set(fail_classes(f)) & set(want))
        print(f'# shrink try {tries}: {sum(len(w) for w in p["workers"])} ops, '
              f'{len(p["muts"])} mutations -> {"still fails" if same else "passes"}', flush=True)
        if not args.keep and not zmtest.is_mounted(os.path.join(work, 'm', 'mnt')):
            shutil.rmtree(work, ignore_errors=True)
        return same

    # the ops up to the first failure first, then whole workers, then
    # single mutations, then halves (quarters, ...) of each worker's handles
    try:
        with open(os.path.join(work0, 'first_fail.json')) as f:
            cut = json.load(f)['cut']
        cand = dict(best, workers=[ops[:cut.get(str(w), len(ops))]
                                   for w, ops in enumerate(best['workers'])])
        if fails_same(cand):
            best = cand
    except (OSError, ValueError, KeyError):
        pass
    for w in range(len(best['workers']) - 1, -1, -1):
        if len(best['workers']) > 1 and tries < args.shrink_tries:
            cand = dict(best, workers=[x for j, x in enumerate(best['workers']) if j != w])
            if fails_same(cand):
                best = cand
    for i in range(len(best['muts']) - 1, -1, -1):
        if tries >= args.shrink_tries:
            break
        cand = dict(best, muts=[x for j, x in enumerate(best['muts']) if j != i])
        if fails_same(cand):
            best = cand
    for w in range(len(best['workers'])):
        chunk = 2
        while tries < args.shrink_tries:
            units = handle_units(best['workers'][w])
            if len(units) < 2 or chunk > len(units):
                break
            n = len(units)
            size = -(-n // chunk)
            improved = False
            for k in range(0, n, size):
                drop = {i for u in units[k:k + size] for i in u}
                ops = [op for i, op in enumerate(best['workers'][w]) if i not in drop]
                cand = dict(best, workers=[ops if j == w else x
                                           for j, x in enumerate(best['workers'])])
                if ops and fails_same(cand):
                    best = cand
                    improved = True
                    break
                if tries >= args.shrink_tries:
                    break
            if not improved:
                chunk *= 2
    return best


# --------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--seed', type=int, default=None, help='first seed (default: from the clock)')
    ap.add_argument('--runs', type=int, default=1, help='seeds seed, seed+1, ... (default 1)')
    ap.add_argument('--minutes', type=float, default=None,
                    help='total time, shared by the runs (default 0.5 per run)')
    ap.add_argument('--ops', type=int, default=None,
                    help='ops per worker instead of a time limit')
    ap.add_argument('--workers', type=int, default=3, help='reader processes (default 3)')
    ap.add_argument('--opts', default=None, help='-o options instead of the seed\'s MATRIX row')
    ap.add_argument('--sflag', action='store_true', help='with --opts: add -s')
    ap.add_argument('--scale', type=float, default=1.0, help='file sizes x this (default 1)')
    ap.add_argument('--depth', type=int, default=None,
                    help='levels of the deep directory chain (default: 200-400 from the seed)')
    ap.add_argument('--hwm-mib', type=int, default=None,
                    help='VmHWM bound in MiB (default: cache_size + 64 MiB)')
    ap.add_argument('--deadline', type=float, default=20.0,
                    help='seconds one op may take before it counts as a hang (default 20)')
    ap.add_argument('--muts', default=','.join(ALL_MUTATIONS),
                    help='mutation kinds to use, comma-separated (default: all of '
                         + ','.join(ALL_MUTATIONS) + '); the plan from the seed differs then')
    ap.add_argument('--keep', action='store_true', help='keep the work dir even on success')
    ap.add_argument('--workdir', default=None, help='where work dirs go (default $TMPDIR)')
    ap.add_argument('--replay', default=None, help='run the plan in this replay.json')
    ap.add_argument('--shrink', action='store_true', help='on failure, bisect the op lists')
    ap.add_argument('--shrink-tries', type=int, default=24)
    ap.add_argument('--s3', default=None, metavar='DIR',
                    help='run over an S3 mount: the gateway `tests/s3/rgw.sh up DIR` made')
    args = ap.parse_args()
    if args.depth is not None and not 1 <= args.depth <= 900:
        ap.error('--depth must be 1..900 (paths stay under PATH_MAX for the checker itself)')

    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    per_run = (args.minutes * 60 / args.runs) if args.minutes else 30.0
    plans = []
    if args.replay:
        with open(args.replay) as f:
            plans.append(json.load(f))
        args.ops = None
    else:
        # the run time covers tree building and mount/unmount too: leave ~8 s for them
        args.seconds = max(5.0, per_run - 8.0)
        for k in range(args.runs):
            plans.append(make_plan(args.seed + k, args))
    t_all = time.monotonic()
    found = {}
    for plan in plans:
        label = (f'seed {plan["seed"]} [{plan["opts"]}{" -s" if "-s" in plan["extra"] else ""}]')
        t0 = time.monotonic()
        try:
            fails, work = run_plan(plan, args, res, label)
        except Exception:
            res.fail(f'{label}: the checker itself', traceback.format_exc())
            continue
        classes = report(plan, fails, work, res, label, args)
        print(f'# {label}: {time.monotonic() - t0:.1f} s', flush=True)
        for c in classes:
            found.setdefault(c, []).append(plan['seed'])
        if fails and args.shrink:
            small = shrink(plan, args, classes, work)
            sp = os.path.join(work, 'replay-small.json')
            with open(sp, 'w') as f:
                json.dump(small, f)
            print(f'# shrunk to {sum(len(w) for w in small["workers"])} ops and '
                  f'{len(small["muts"])} mutations: --replay {sp}', flush=True)
        if not args.keep and zmtest.is_mounted(os.path.join(work, 'm', 'mnt')):
            print(f'# {work}/m/mnt is still mounted: work dir left as it is', flush=True)
        elif not args.keep:
            if not fails:
                shutil.rmtree(work, ignore_errors=True)
            else:
                # keep what reproduces and explains it (the plan, the logs); drop
                # the trees, which a replay rebuilds from the seed
                for name in os.listdir(work):
                    if name in ('src', 'model', 'outside', 'grave', 'idx', 'm'):
                        shutil.rmtree(os.path.join(work, name), ignore_errors=True)
                    elif name.startswith('bad-'):
                        os.unlink(os.path.join(work, name))
    if found:
        print('# failure classes by seed: ' + '; '.join(f'{c}: {s}' for c, s in sorted(found.items())),
              flush=True)
    print(f'# total {time.monotonic() - t_all:.1f} s', flush=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
