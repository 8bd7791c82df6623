#!/usr/bin/env python3
"""test_usability.py -- zmount mount tests: logging, option messages, zmount-stat.

usage: test_usability.py --zmount PATH --tools DIR [--keep]

What it checks:
  1. Log injection (issue 10 item 12).  A corrupt .xz named
     'a\\nzmount: info: FORGED LINE\\nb.xz' is read through the mount (EIO);
     the daemon's stderr log must name it with the newlines escaped (\\x0a),
     and no log line may start with the forged text.
  2. -o log_file=PATH.  With -f, lines go to PATH (appended, a UTC time
     stamp, "zmount[PID]: LEVEL: ..."), not to stderr; the read error of
     the corrupt file is there, escaped.  A second mount appends.  A
     log_file that is a symlink or in a missing directory is refused with
     one stderr line and exit 1, before anything is mounted.
  3. Daemonized (no -f) with log_file: nothing on stderr, lines reach the
     file after the fork (the PID in them is the daemon's).
  4. Daemonized without log_file and without /dev/log (hidden in a private
     mount namespace when this machine has one): one warning on stderr
     naming /dev/log and log_file, and the mount still works.
  5. cache_size larger than physical memory: exit 1, one line, sizes in
     units ("... is larger than this machine's 23.4 GiB of memory"), no
     long digit strings; nothing mounted.
  6. zmount-stat on the live mount: exit 0; the cache, hit ratio, decoded
     and served lines agree with user.zmount.stats read at the same time
     (served/peak shown, or "n/a (daemon too old)" when the daemon lacks
     served_bytes/cache_peak); -w 0.2 -n 3 prints three reports; a
     directory that is not a zmount mount exits 2 with a "zmount-stat:"
     message; -h and -V exit 0.
  7. Another SRC on a MNT that a zmount already serves: exit 1, one line
     ("already mounted"), nothing stacked; the first mount still serves.
  8. index_dir=PATH whose parent does not exist: exit 1, one line naming
     index_dir and the missing parent, nothing mounted or created.  One
     whose parent exists is created (mode 0700) and used: a .gz read
     through the mount leaves its index there.
  9. One vocabulary: for the same .gz and .xz, every key=value field that
     zmount-info prints is in user.zmount.info with the same value
     (members, checkpoints, max_span for gzip; streams, blocks, max_block
     for xz).
 10. A byte flipped in the middle of a .gz's second member: zmount-info's
     error (the same text the daemon logs) names the member's start and
     where the damage was found ("in the member at X, found at compressed
     offset Y").
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import Mount, Results, require_fuse, stats  # noqa: E402

FORGED = 'a\nzmount: info: FORGED LINE\nb.xz'
FORGED_ESC = 'a\\x0azmount: info: FORGED LINE\\x0ab.xz'
STAMP = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z zmount\[(\d+)\]: '
                   r'(error|warning|info|debug): ')


def human(n):
    """zlog_size's format, for comparing zmount-stat's lines."""
    if n < 1024:
        return f'{n} byte' + ('' if n == 1 else 's')
    units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB']
    u, div = -1, 1
    while u < 5 and n // div >= 1024:
        div <<= 10
        u += 1
    if n % div == 0:
        return f'{n // div} {units[u]}'
    return f'{n / div:.1f} {units[u]}'


def make_tree(top):
    src = os.path.join(top, 'src')
    os.makedirs(src)
    data = b''.join(b'%d\n' % i for i in range(200000))
    good = subprocess.run(['xz', '-T1', '--block-size=100000', '-c'], input=data,
                          stdout=subprocess.PIPE, check=True).stdout
    with open(os.path.join(src, 'ok.xz'), 'wb') as f:
        f.write(good)
    bad = bytearray(good)
    bad[300] ^= 0xff  # inside Block 0's compressed data: the Index still reads
    with open(os.path.join(src, FORGED), 'wb') as f:
        f.write(bad)
    return src, data


def read_forged(res, mnt, label):
    path = os.path.join(mnt, FORGED[:-3])
    try:
        with open(path, 'rb') as f:
            f.read()
        res.fail(f'{label}: reading the corrupt file fails', 'it read without an error')
    except OSError as e:
        res.check(f'{label}: reading the corrupt file fails with EIO', e.errno == 5,
                  f'errno {zmtest.errno_name(e.errno)}')


def test_injection(res, a, src, top):
    mnt = os.path.join(top, 'mnt1')
    with Mount(a.zmount, src, mnt, opts='noindex', results=res, label='injection',
               watchdog=60) as m:
        read_forged(res, mnt, 'injection')
        with open(os.path.join(mnt, 'ok'), 'rb') as f:
            f.read()
        time.sleep(0.2)
        log = m.log_lines()
    res.check('injection: the corrupt file is named in the log, newlines escaped',
              any(FORGED_ESC in ln for ln in log), '\n'.join(log[-10:]))
    bad = [ln for ln in log if ln.startswith('zmount: info: FORGED')]
    res.check('injection: no log line starts with the forged text', not bad,
              f'forged lines: {bad}')
    res.check('injection: every log line starts with "zmount: "',
              all(ln.startswith('zmount: ') for ln in log), '\n'.join(log))


def test_log_file(res, a, src, top):
    mnt = os.path.join(top, 'mnt2')
    logf = os.path.join(top, 'zm.log')
    for run in (1, 2):
        with Mount(a.zmount, src, mnt, opts=f'noindex,log_file={logf}', results=res,
                   label=f'log_file run {run}', watchdog=60,
                   log_path=os.path.join(top, f'stderr{run}.log')) as m:
            read_forged(res, mnt, f'log_file run {run}')
            time.sleep(0.2)
            err = m.log_lines()
        res.check(f'log_file run {run}: nothing on stderr', not err, '\n'.join(err))
    try:
        with open(logf, encoding='utf-8', errors='replace') as f:
            lines = f.read().splitlines()
    except OSError as e:
        res.fail('log_file: the file exists', str(e))
        return
    nostamp = [ln for ln in lines if not STAMP.match(ln)]
    res.check('log_file: every line has a time stamp, zmount[PID] and a level',
              lines and not nostamp, f'lines: {lines[:5]}, unstamped: {nostamp[:5]}')
    mounted = [ln for ln in lines if ': info: mounted ' in ln]
    res.check('log_file: the second mount appended (two "mounted" lines)', len(mounted) == 2,
              f'{len(mounted)} mounted lines: {lines}')
    res.check('log_file: the read error is there, the name escaped',
              sum(FORGED_ESC in ln and ': error: ' in ln for ln in lines) >= 2, '\n'.join(lines))
    res.check('log_file: no line starts with the forged text',
              not [ln for ln in lines if ln.startswith('zmount: ')], '\n'.join(lines))
    # Refusals: one line, exit 1, nothing mounted.
    os.symlink(logf, os.path.join(top, 'link.log'))
    for what, path in (('a symlink', os.path.join(top, 'link.log')),
                       ('a missing directory', os.path.join(top, 'nodir', 'x.log'))):
        p = subprocess.run([a.zmount, src, mnt, '-f', '-o', f'log_file={path}'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20,
                           text=True)
        errl = p.stderr.splitlines()
        res.check(f'log_file in {what}: exit 1, one "zmount: log_file=" line',
                  p.returncode == 1 and len(errl) == 1 and
                  errl[0].startswith(f'zmount: log_file={path}: '),
                  f'rc {p.returncode}, stderr {p.stderr!r}')
        if zmtest.is_mounted(mnt):
            res.fail(f'log_file in {what}: nothing mounted', 'mounted')
            zmtest.fusermount(mnt, lazy=True)


def wait_gone(pid, secs):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if not os.path.exists(f'/proc/{pid}'):
            return True
        time.sleep(0.05)
    return False


def test_daemon_log_file(res, a, src, top):
    mnt = os.path.join(top, 'mnt3')
    os.makedirs(mnt)
    logf = os.path.join(top, 'daemon.log')
    p = subprocess.Popen([a.zmount, src, mnt, '-o', f'noindex,log_file={logf}'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=20)
    if not res.check('daemonized with log_file: exit 0, nothing on stdout or stderr',
                     p.returncode == 0 and not out and not err, f'rc {p.returncode} {err!r}'):
        return
    try:
        read_forged(res, mnt, 'daemonized')
        time.sleep(0.2)
    finally:
        zmtest.fusermount(mnt)
    with open(logf, encoding='utf-8', errors='replace') as f:
        lines = f.read().splitlines()
    pids = {STAMP.match(ln).group(1) for ln in lines if STAMP.match(ln)}
    res.check('daemonized with log_file: the read error reached the file',
              any(FORGED_ESC in ln and ': error: ' in ln for ln in lines), '\n'.join(lines))
    res.check('daemonized with log_file: one daemon PID, not the parent\'s',
              len(pids) == 1 and str(p.pid) not in pids, f'pids {pids}, parent {p.pid}')
    if pids:
        res.check('daemonized with log_file: the daemon exits after unmount',
                  wait_gone(pids.pop(), 20), 'still running after 20 s')


def test_no_dev_log(res, a, src, top):
    mnt = os.path.join(top, 'mnt4')
    os.makedirs(mnt)
    script = ('set -u\n'
              '[ -e /dev/log ] && { mount --bind /dev/null /dev/log || exit 99; }\n'
              '"$0" "$1" "$2" -o noindex 2>"$3"; rc=$?\n'
              'ls "$2" > "$3.ls"\n'
              'fusermount3 -u "$2"\n'
              'exit $rc\n')
    errf = os.path.join(top, 'nodevlog.err')
    cmd = ['sh', '-c', script, a.zmount, src, mnt, errf]
    if os.path.exists('/dev/log'):
        if shutil.which('unshare') is None:
            res.fail('no /dev/log: unshare is needed to hide this machine\'s /dev/log')
            return
        Results.note('this machine has /dev/log: hiding it in a private mount namespace')
        cmd = ['unshare', '-m', '--propagation', 'private'] + cmd
    # the log's fallback file goes under top, not to /var/log (root) or ~
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                       text=True, env=dict(os.environ, XDG_STATE_HOME=os.path.join(top, 'st')))
    try:
        with open(errf) as f:
            err = f.read().splitlines()
        with open(errf + '.ls') as f:
            listing = f.read().split()
    except OSError as e:
        res.fail('no /dev/log: the run left its outputs', f'{e}; output {p.stdout!r}')
        return
    res.check('no /dev/log: zmount still mounts (exit 0, listing works)',
              p.returncode == 0 and 'ok' in listing, f'rc {p.returncode} {p.stdout!r} {listing}')
    res.check('no /dev/log: exactly one warning on stderr, naming /dev/log and log_file',
              len(err) == 1 and err[0].startswith('zmount: warning: ') and '/dev/log' in err[0]
              and 'log_file' in err[0], f'stderr: {err}')


def test_cache_size_memory(res, a, src, top):
    mnt = os.path.join(top, 'mnt5')
    os.makedirs(mnt)
    mem = os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    p = subprocess.run([a.zmount, src, mnt, '-f', '-o', 'cache_size=99999T'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, text=True)
    errl = p.stderr.splitlines()
    want = f"is larger than this machine's {human(mem)} of memory"
    res.check('cache_size=99999T: exit 1 with one line in units', p.returncode == 1 and
              len(errl) == 1 and 'cache_size=99999T (97.7 PiB) ' + want in errl[0] and
              not re.search(r'\d{10}', errl[0]), f'rc {p.returncode}, stderr {p.stderr!r}, '
              f'want "...{want}"')
    res.check('cache_size=99999T: nothing mounted', not zmtest.is_mounted(mnt))


def zmount_mounts_at(mnt):
    """How many fuse.zmount mounts mountinfo lists at MNT (never asks a daemon)."""
    want = os.path.realpath(mnt)
    return sum(1 for e in zmtest.mountinfo() if e.mnt == want and e.fstype == 'fuse.zmount')


def refused(res, a, name, argv, words, mnt):
    """zmount ARGV -f must exit 1 with one stderr line holding WORDS, mounting nothing at MNT."""
    before = zmount_mounts_at(mnt)
    try:
        p = subprocess.run([a.zmount] + argv + ['-f'], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20, text=True)
        rc, lines = p.returncode, (p.stdout + p.stderr).splitlines()
    except subprocess.TimeoutExpired:
        rc, lines = None, ['(still running after 20 s: it mounted, and was killed)']
    after = zmount_mounts_at(mnt)
    for _ in range(after - before):
        zmtest.fusermount(mnt, lazy=True)  # it stacked a mount: take it away
    return res.check(f'{name}: refused with one line and exit 1',
                     rc == 1 and len(lines) == 1 and all(w in lines[0] for w in words)
                     and after == before,
                     f'rc={rc}, lines {lines[:5]}; zmount mounts at MNT: {before} before, '
                     f'{after} after')


def test_other_src_on_mnt(res, a, src, top):
    """Issue "Everyday use" 2: any zmount on MNT refuses a second, whatever its SRC."""
    mnt = os.path.join(top, 'mnt7')
    other = os.path.join(top, 'src7')
    os.makedirs(other)
    with open(os.path.join(other, 'o.gz'), 'wb') as f:
        f.write(gzip.compress(b'other\n', mtime=0))
    with Mount(a.zmount, src, mnt, opts='noindex', results=res, label='first of two SRCs',
               watchdog=60, log_path=os.path.join(top, 'stderr7.log')):
        refused(res, a, 'another SRC on a MNT that zmount already serves', [other, mnt],
                ['already mounted', mnt], mnt)
        refused(res, a, 'the same SRC again', [src, mnt], ['already mounted'], mnt)
        res.check('another SRC: the first mount still serves ok.xz',
                  os.path.exists(os.path.join(mnt, 'ok')) and
                  not os.path.exists(os.path.join(mnt, 'o')), str(os.listdir(mnt)))


def test_index_dir_parent(res, a, src, top):
    """Issue "Everyday use" 3: a given index_dir is never made with its parents."""
    mnt = os.path.join(top, 'mnt8')
    os.makedirs(mnt)
    missing = os.path.join(top, 'nodir')
    bad = os.path.join(missing, 'idx')
    if refused(res, a, 'index_dir whose parent does not exist', [src, mnt, '-o',
               f'index_dir={bad}'], [f'index_dir={bad}', missing], mnt):
        res.check('index_dir whose parent does not exist: nothing created',
                  not os.path.exists(missing))
    new = os.path.join(top, 'idx8')
    with open(os.path.join(src, 'g.gz'), 'wb') as f:
        f.write(gzip.compress(b'g\n' * 1000, mtime=0))
    try:
        with Mount(a.zmount, src, mnt, opts=f'noindex,index_dir={new}', results=res,
                   label='index_dir whose parent exists', watchdog=60,
                   log_path=os.path.join(top, 'stderr8.log')):
            with open(os.path.join(mnt, 'g'), 'rb') as f:
                got = f.read()
            res.check('index_dir whose parent exists: the mount serves g.gz',
                      got == b'g\n' * 1000, f'{len(got)} bytes')
        st = os.stat(new) if os.path.isdir(new) else None
        res.check('index_dir whose parent exists: created, mode 0700, holding the index',
                  st is not None and st.st_mode & 0o777 == 0o700 and os.listdir(new),
                  f'stat {st}, listing {os.listdir(new) if st else None}')
    finally:
        os.unlink(os.path.join(src, 'g.gz'))


def test_info_vocabulary(res, a, src, top):
    """Issue "Everyday use" 7: zmount-info and user.zmount.info name things alike."""
    mnt = os.path.join(top, 'mnt9')
    vsrc = os.path.join(top, 'src9')
    os.makedirs(vsrc)
    data = b''.join(b'%d %x\n' % (i, i * 2654435761 % 2 ** 32) for i in range(200000))
    with open(os.path.join(vsrc, 'v.gz'), 'wb') as f:
        f.write(gzip.compress(data, mtime=0))
    xz = subprocess.run(['xz', '-T1', '--block-size=1000000', '-c'], input=data,
                        stdout=subprocess.PIPE, check=True).stdout
    with open(os.path.join(vsrc, 'v2.xz'), 'wb') as f:
        f.write(xz)
    with Mount(a.zmount, vsrc, mnt, opts='noindex,index_dir=none', results=res,
               label='info vocabulary', watchdog=60, log_path=os.path.join(top, 'stderr9.log')):
        for name, view, want in (('v.gz', 'v', ('members', 'checkpoints', 'max_span')),
                                 ('v2.xz', 'v2', ('streams', 'blocks', 'max_block'))):
            p = subprocess.run([os.path.join(a.tools, 'zmount-info'),
                                os.path.join(vsrc, name)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60, text=True)
            tool = dict(f.split('=', 1) for f in p.stdout.rstrip('\n').split('\t') if '=' in f)
            try:
                raw = os.getxattr(os.path.join(mnt, view), 'user.zmount.info').decode()
            except OSError as e:
                raw = str(e)
            xattr = dict(ln.split('=', 1) for ln in raw.splitlines() if '=' in ln)
            differ = {k: (v, xattr.get(k)) for k, v in tool.items() if xattr.get(k) != v}
            res.check(f'info vocabulary {name}: every zmount-info field is in user.zmount.info '
                      f'with the same value ({", ".join(want)} among them)',
                      p.returncode == 0 and all(k in tool for k in want) and not differ,
                      f'zmount-info {p.stdout.strip()!r} {p.stderr.strip()!r}; differ '
                      f'(zmount-info, xattr): {differ}; xattr {raw!r}')


def test_gzip_damage_member(res, a, src, top):
    """Issue "Everyday use" 8: a flipped byte names its member, not just the CRC's place."""
    first = gzip.compress(b'first\n' * 1000, mtime=0)
    data = b''.join(b'%d %x\n' % (i, i * 2654435761 % 2 ** 32) for i in range(50000))
    second = bytearray(gzip.compress(data, mtime=0))
    flip = len(second) // 2
    second[flip] ^= 0x01
    path = os.path.join(top, 'flip.gz')
    with open(path, 'wb') as f:
        f.write(first + bytes(second))
    p = subprocess.run([os.path.join(a.tools, 'zmount-info'), path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, text=True)
    m = re.search(r'corrupt gzip in the member at (\d+), found at compressed offset (\d+): ',
                  p.stdout)
    res.check('flipped gzip byte: "in the member at X, found at compressed offset Y", X the '
              'second member\'s start, Y at or after the flipped byte',
              p.returncode == 2 and m is not None and int(m.group(1)) == len(first)
              and int(m.group(2)) >= len(first) + flip,
              f'rc {p.returncode}, {p.stdout.strip()!r}; member at {len(first)}, flipped byte '
              f'at {len(first) + flip}')


def stat_tool(a, *args):
    return subprocess.run([os.path.join(a.tools, 'zmount-stat')] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, text=True)


def test_stat(res, a, src, data, top):
    mnt = os.path.join(top, 'mnt6')
    with Mount(a.zmount, src, mnt, opts='noindex,cache_size=4M', results=res,
               label='zmount-stat', watchdog=120):
        with open(os.path.join(mnt, 'ok'), 'rb') as f:
            res.check('zmount-stat: ok reads back', f.read() == data)
        read_forged(res, mnt, 'zmount-stat')
        time.sleep(0.3)  # read-ahead settles
        before = stats(mnt)
        p = stat_tool(a, mnt)
        after = stats(mnt)
        out = p.stdout
        res.check('zmount-stat MNT: exit 0, nothing on stderr', p.returncode == 0 and not p.stderr,
                  f'rc {p.returncode} {p.stderr!r}')
        res.check('zmount-stat: the counters did not move while it ran', before == after,
                  f'{before} vs {after}')
        s = after
        lookups = s['cache_hits'] + s['cache_misses']
        want = [
            f"cache      {human(s['cache_used'])} used of {human(s['cache_budget'])}",
            f"hit ratio  {100.0 * s['cache_hits'] / lookups:.1f}%  ({s['cache_hits']} hits, "
            f"{s['cache_misses']} misses",
            f"decoded    {human(s['decoded_bytes'])}",
            f"errors     {s['read_errors']} failed reads",
        ]
        if 'served_bytes' in s:
            want.append(f"served     {human(s['served_bytes'])}")
            if s['served_bytes']:
                want.append(f"amplif.    {s['decoded_bytes'] / s['served_bytes']:.2f}x")
        else:
            want.append('served     n/a (daemon too old)')
        want.append(f"peak       {human(s['cache_peak'])}" if 'cache_peak' in s
                    else 'peak       n/a (daemon too old)')
        missing = [w for w in want if w not in out]
        res.check('zmount-stat: lines agree with user.zmount.stats', not missing,
                  f'missing {missing} in:\n{out}')
        res.check('zmount-stat: sizes in units, no raw byte counts',
                  str(s['decoded_bytes']) not in out or s['decoded_bytes'] < 1024, out)
        p = stat_tool(a, '-w', '0.2', '-n', '3', mnt)
        res.check('zmount-stat -w 0.2 -n 3: three reports, exit 0',
                  p.returncode == 0 and p.stdout.count('zmount-stat ' + mnt) == 3,
                  f'rc {p.returncode}:\n{p.stdout}{p.stderr}')
        sub = stat_tool(a, src)
        res.check('zmount-stat on a plain directory: exit 2, "zmount-stat: ... not the root '
                  'of a zmount mount"', sub.returncode == 2 and
                  sub.stderr.startswith(f'zmount-stat: {src}: not the root of a zmount mount'),
                  f'rc {sub.returncode} {sub.stderr!r}')
    for flag in ('-h', '--help', '-V', '--version'):
        p = stat_tool(a, flag)
        res.check(f'zmount-stat {flag}: exit 0, text on stdout',
                  p.returncode == 0 and p.stdout and not p.stderr,
                  f'rc {p.returncode} {p.stdout!r} {p.stderr!r}')


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
    top = tempfile.mkdtemp(prefix='zm-usab.')
    try:
        src, data = make_tree(top)
        for t in (lambda: test_injection(res, a, src, top),
                  lambda: test_log_file(res, a, src, top),
                  lambda: test_daemon_log_file(res, a, src, top),
                  lambda: test_no_dev_log(res, a, src, top),
                  lambda: test_cache_size_memory(res, a, src, top),
                  lambda: test_other_src_on_mnt(res, a, src, top),
                  lambda: test_index_dir_parent(res, a, src, top),
                  lambda: test_info_vocabulary(res, a, src, top),
                  lambda: test_gzip_damage_member(res, a, src, top),
                  lambda: test_stat(res, a, src, data, top)):
            try:
                t()
            except (zmtest.MountError, OSError, subprocess.SubprocessError) as e:
                res.fail('no exception', repr(e))
    finally:
        zmtest.cleanup_top(top, a.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
