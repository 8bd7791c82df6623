#!/usr/bin/env python3
"""test_stat_causes.py -- zmount-stat says why a file is slow (issue 20 item 6).

usage: test_stat_causes.py --zmount PATH --tools DIR [--keep]

What it checks:
  1. Causes and fixes.  A tree with wide.xz (12 MiB in Blocks of 6 MiB),
     one.xz (3 MiB in one Block) and g.gz (1 MiB, no saved index), mounted
     with noindex,index_dir=none,cache_size=4M (so cache_size/2 = 2 MiB):
     after ten random reads of wide.xz and a few of the others, the stats
     attribute has "top=DECODED SERVED READS WHY PATH" lines with WHY
     wide_unit:6291456, one_unit:... and no_index for the right files, and
     zmount-stat prints, under each file's path, decoded against served and
     the cause and fix in words (cache_size=13M for wide.xz, xz -T0 for
     one.xz; for g.gz, as this mount has index_dir=none, to mount without
     it), and no raw key=value lines.
  1b. Causes from the file's state.  With salvage,index_dir=DIR and the
     background indexer: a good g.gz whose index the indexer saved is
     "index_saved" (fix: none needed, no zmount-index build), and a cut
     cut.gz is "salvaged" (damaged: no zmount-index build either).
  2. Index errors apart, and named.  A tree with a .gz whose CRC32 is wrong
     and one cut short, mounted with background indexing on and nothing
     read: once the indexer's summary is logged, the stats say
     index_errors=2 and read_errors=0, and zmount-stat shows "errors     0
     failed reads", the index errors on their own line, and each damaged
     file's path with its reason.  Opening bad.gz again (after the kernel
     forgot it, and after its mtime changed) still counts it once.
  3. Pass progress.  A 16 MiB .xz in one Block, span=1M (checkpoints for
     Blocks over 2 MiB), cache_size=16M, noindex:
     a far read starts a checkpoint pass; while it runs, user.zmount.info
     has pass=checkpoints, pass_done and pass_total (the Block's size), and
     zmount-stat -w lists the file under "passes" with bytes done, rate
     and time left.
"""
import argparse
import gzip
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import Mount, Results, require_fuse, stats  # noqa: E402

MiB = 1 << 20


def lines_data(n):
    """n bytes of text that xz and gzip compress well but not to nothing."""
    out, i = bytearray(), 0
    while len(out) < n:
        out += b'%d %x line\n' % (i, i * 2654435761 % (1 << 32))
        i += 1
    return bytes(out[:n])


def xz(data, *args):
    return subprocess.run(['xz', '-0', '-T1', '-c'] + list(args), input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def stat_tool(a, mnt):
    return subprocess.run([os.path.join(a.tools, 'zmount-stat'), mnt], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=30, text=True)


def file_block(out, path):
    """zmount-stat's lines about one top file: its path line and the indented ones below."""
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln == '  ' + path:
            block = [ln]
            for nxt in lines[i + 1:]:
                if not nxt.startswith('    '):
                    break
                block.append(nxt)
            return '\n'.join(block)
    return ''


def test_causes(res, a, top):
    src = os.path.join(top, 'src1')
    os.makedirs(src)
    wide, one, g = lines_data(12 * MiB), lines_data(3 * MiB), lines_data(MiB)
    with open(os.path.join(src, 'wide.xz'), 'wb') as f:
        f.write(xz(wide, '--block-size=6MiB'))
    with open(os.path.join(src, 'one.xz'), 'wb') as f:
        f.write(xz(one))
    with open(os.path.join(src, 'g.gz'), 'wb') as f:
        f.write(gzip.compress(g, 6))
    mnt = os.path.join(top, 'mnt1')
    rnd = random.Random(20)
    with Mount(a.zmount, src, mnt, opts='noindex,index_dir=none,cache_size=4M', results=res,
               label='causes', watchdog=120):
        with open(os.path.join(mnt, 'wide'), 'rb') as f:
            for _ in range(10):
                off = rnd.randrange(len(wide) - 256)
                f.seek(off)
                res.check(f'wide: 256 bytes at {off} right', f.read(256) == wide[off:off + 256])
        with open(os.path.join(mnt, 'one'), 'rb') as f:
            f.seek(2 * MiB)
            res.check('one: bytes at 2 MiB right', f.read(4096) == one[2 * MiB:2 * MiB + 4096])
        with open(os.path.join(mnt, 'g'), 'rb') as f:
            f.seek(500000)
            res.check('g: bytes at 500000 right', f.read(4096) == g[500000:504096])
        time.sleep(0.3)  # read-ahead settles (not asserted on)
        raw = os.getxattr(mnt, 'user.zmount.stats').decode()
        p = stat_tool(a, mnt)
    out = p.stdout
    res.check('zmount-stat: exit 0, nothing on stderr', p.returncode == 0 and not p.stderr,
              f'rc {p.returncode} {p.stderr!r}')
    tops = re.findall(r'^top=(\d+) (\d+) (\d+) (\S+) (.*)$', raw, re.M)
    why = {os.path.basename(t[4]): t[3] for t in tops}
    res.check('stats: top lines "DECODED SERVED READS WHY PATH": wide.xz wide_unit:6291456, one.xz '
              'one_unit:..., g.gz no_index_dir (index_dir=none)',
              why.get('wide.xz') == 'wide_unit:6291456' and
              re.fullmatch(r'one_unit:\d+', why.get('one.xz', '')) is not None and
              why.get('g.gz') == 'no_index_dir', raw)
    res.check('stats: index_errors=0 read_errors=0',
              'index_errors=0\n' in raw and 'read_errors=0\n' in raw, raw)
    wants = {
        'wide.xz': ['decoded ', ' to serve ', ' reads (',
                    'cause: Blocks of up to 6 MiB are wider than cache_size/2 (2 MiB): '
                    'random reads decode from the Block start',
                    'fix:   mount with cache_size=13M or more'],
        'one.xz': ['cause: the whole file is one Block of 3 MiB, more than cache_size/2 (2 MiB)',
                   'fix:   recompress with xz -T0'],
        'g.gz': ['cause: gzip not yet indexed, so its index was built: opening it decoded the '
                 'whole file once', 'index_dir=none',
                 'fix:   mount without index_dir=none'],
    }
    for name, want in wants.items():
        block = file_block(out, os.path.join(src, name))
        missing = [w for w in want if w not in block]
        res.check(f'zmount-stat: {name}: decoded vs served, cause and fix', block and not missing,
                  f'missing {missing} in:\n{out}')
    res.check('zmount-stat: no raw key=value lines (every key known, shown in units)',
              not re.search(r'^(other|\S+=\d)', out, re.M), out)


def test_causes_state(res, a, top):
    """The advice follows each file's real state: saved by the indexer, salvaged."""
    src, ixd = os.path.join(top, 'src3'), os.path.join(top, 'ix3')
    os.makedirs(src)
    os.makedirs(ixd)
    g = lines_data(MiB)
    with open(os.path.join(src, 'g.gz'), 'wb') as f:
        f.write(gzip.compress(g, 6))
    cut = gzip.compress(lines_data(MiB), 6)
    with open(os.path.join(src, 'cut.gz'), 'wb') as f:
        f.write(cut[:len(cut) // 2])
    mnt = os.path.join(top, 'mnt3')
    with Mount(a.zmount, src, mnt, opts=f'salvage,index_dir={ixd}', results=res,
               label='state', watchdog=120) as m:
        deadline = time.monotonic() + 20
        while 'background indexing done' not in m.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        res.check('state: the background indexer finished', 'background indexing done' in
                  m.log_text(), m.log_text())
        with open(os.path.join(mnt, 'g'), 'rb') as f:
            f.seek(500000)
            res.check('state: g: bytes at 500000 right', f.read(4096) == g[500000:504096])
        with open(os.path.join(mnt, 'cut'), 'rb') as f:
            f.read(4096)
        raw = os.getxattr(mnt, 'user.zmount.stats').decode()
        p = stat_tool(a, mnt)
    tops = re.findall(r'^top=(\d+) (\d+) (\d+) (\S+) (.*)$', raw, re.M)
    why = {os.path.basename(t[4]): t[3] for t in tops}
    res.check('state: stats: g.gz index_saved (the indexer saved it), cut.gz salvaged',
              why.get('g.gz') == 'index_saved' and why.get('cut.gz') == 'salvaged', raw)
    gb = file_block(p.stdout, os.path.join(src, 'g.gz'))
    res.check('state: zmount-stat: g.gz: its index is saved, nothing to do, no zmount-index build',
              'saved in index_dir' in gb and 'fix:   none needed' in gb and
              'zmount-index build' not in gb, p.stdout)
    cb = file_block(p.stdout, os.path.join(src, 'cut.gz'))
    res.check('state: zmount-stat: cut.gz: damaged and salvaged, no zmount-index build',
              'damaged' in cb and 'salvage' in cb and 'zmount-index build' not in cb and
              'fix:   ' in cb, p.stdout)


def test_pass_progress(res, a, top):
    """A checkpoint pass over a large Block shows in user.zmount.info and zmount-stat -w."""
    src = os.path.join(top, 'src4')
    os.makedirs(src)
    size = 16 * MiB
    data = lines_data(MiB) * 16  # xz -0's dictionary (256 KiB) cannot see the repeats
    with open(os.path.join(src, 'big.xz'), 'wb') as f:
        f.write(xz(data, '--block-size=64MiB'))  # one Block of 16 MiB, wide for span=1M
    mnt = os.path.join(top, 'mnt4')
    seen, info_lines = [], ''
    with Mount(a.zmount, src, mnt, opts='noindex,index_dir=none,cache_size=16M,span=1M',
               results=res, label='pass', watchdog=120):
        watch = subprocess.Popen([os.path.join(a.tools, 'zmount-stat'), '-w', '0.05', '-n',
                                  '200', mnt], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
        off = size - 3 * MiB

        def far_read():
            with open(os.path.join(mnt, 'big'), 'rb') as f:
                f.seek(off)
                seen.append(f.read(4096) == data[off:off + 4096])
        t = threading.Thread(target=far_read)
        t.start()
        path = os.path.join(mnt, 'big')
        deadline = time.monotonic() + 60
        idle = 0
        while time.monotonic() < deadline and idle < 200:
            info = os.getxattr(path, 'user.zmount.info').decode()
            if 'pass=' in info:
                info_lines = info
                break
            idle += not t.is_alive()  # the read is done: a pass it started may still run
            time.sleep(0.002)
        t.join()
        while 'pass=' in os.getxattr(path, 'user.zmount.info').decode() and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        watch.kill()
        wout, _ = watch.communicate()
    res.check('pass: the far read returned the right bytes', seen == [True], f'{seen}')
    kv = dict(ln.split('=', 1) for ln in info_lines.splitlines() if '=' in ln)
    res.check('pass: user.zmount.info shows the running pass: pass=checkpoints, '
              '0 <= pass_done <= pass_total = the Block\'s size',
              kv.get('pass') == 'checkpoints' and kv.get('pass_total') == str(size) and
              0 <= int(kv.get('pass_done', '-1')) <= size, info_lines or '<never seen>')
    res.check('pass: zmount-stat -w showed the file being passed over, with rate and time left',
              re.search(r'^passes\n  ' + re.escape(os.path.join(src, 'big.xz')) +
                        r'\n    checkpoints: .* of 16 MiB \(\d+%\)', wout, re.M) is not None
              and ' left' in wout, wout[-3000:])


def test_index_errors(res, a, top):
    src = os.path.join(top, 'src2')
    os.makedirs(src)
    blob = bytearray(gzip.compress(lines_data(200000), 6))
    blob[-6] ^= 0xff  # the CRC32: the header reads, the index pass fails
    with open(os.path.join(src, 'bad.gz'), 'wb') as f:
        f.write(blob)
    cut = gzip.compress(lines_data(300000), 6)
    with open(os.path.join(src, 'cut.gz'), 'wb') as f:
        f.write(cut[:len(cut) // 2])  # cut short: "cut short at compressed offset N"
    mnt = os.path.join(top, 'mnt2')
    with Mount(a.zmount, src, mnt, opts='index_dir=none', results=res, label='ixerr',
               watchdog=120) as m:
        deadline = time.monotonic() + 20
        while 'background indexing done' not in m.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        res.check('the indexer logged its verdict on bad.gz', 'corrupt' in m.log_text(),
                  m.log_text())
        s = stats(mnt)
        p = stat_tool(a, mnt)
        # the same damaged file, opened again: after the kernel forgot it, and changed in time
        for _ in range(2):
            try:
                with open(os.path.join(mnt, 'bad'), 'rb') as f:
                    f.read()
            except OSError:
                pass
            with open('/proc/sys/vm/drop_caches', 'w') as f:
                f.write('2')
            os.utime(os.path.join(src, 'bad.gz'))
        s2 = stats(mnt)
        p2 = stat_tool(a, mnt)
    res.check('stats: index_errors=2, read_errors=0 (nothing was read)',
              s.get('index_errors') == 2 and s.get('read_errors') == 0, f'stats {s}')
    res.check('zmount-stat: "errors     0 failed reads" and the index errors on their own line',
              p.returncode == 0 and '\nerrors     0 failed reads\n' in p.stdout and
              '\ncorrupt    2 archives failed to index' in p.stdout, p.stdout + p.stderr)
    want = [os.path.join(src, 'bad.gz') + ': corrupt gzip in the member at 0, found at '
            'compressed offset ',
            'incorrect data check',
            os.path.join(src, 'cut.gz') + ': cut short at compressed offset ',
            '(still being written, or truncated)']
    res.check('zmount-stat: names each damaged file with its reason',
              all(w in p.stdout for w in want),
              f'want {want} in:\n{p.stdout}')
    res.check('stats: one damaged file opened again counts once (index_errors still 2)',
              s2.get('index_errors') == 2, f'stats {s2}')
    res.check('zmount-stat: bad.gz named once after it was opened again',
              p2.stdout.count(os.path.join(src, 'bad.gz') + ':') == 1, p2.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--tools', required=True, help='directory holding zmount-stat')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()
    require_fuse()
    res = Results()
    if not zmtest.binary_ok(res, a.zmount) or not zmtest.binary_ok(
            res, os.path.join(a.tools, 'zmount-stat')):
        return res.finish()
    if not shutil.which('xz'):
        res.fail('xz(1) on PATH', 'not found')
        return res.finish()
    top = tempfile.mkdtemp(prefix='zm-statc.')
    try:
        for t in (test_causes, test_causes_state, test_index_errors, test_pass_progress):
            try:
                t(res, a, top)
            except (zmtest.MountError, OSError, subprocess.SubprocessError) as e:
                res.fail(f'{t.__name__}: no exception', repr(e))
    finally:
        zmtest.cleanup_top(top, a.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
