#!/usr/bin/env python3
"""test_logfallback.py -- without syslog, the log goes to a file (Everyday use, item 1).

usage: test_logfallback.py --zmount PATH --tools DIR [--keep]

What it checks: zmount in the background (no -f) with no /dev/log (this
machine's own state, or /dev/log hidden under /dev/null in a private mount
namespace when it has one) and no log_file, with XDG_STATE_HOME set to a
fresh directory:
  1. before detaching, stderr names the fallback file
     $XDG_STATE_HOME/zmount/zmount.log (one line, naming /dev/log);
  2. reading a .xz whose Block is damaged fails with EIO, and the error line
     naming the file and "offset" is in that file, with a time stamp and the
     daemon's pid;
  3. zmount-stat shows where the log goes ("log        PATH").
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from zmtest import Results, require_fuse  # noqa: E402


def text(n):
    out, i = bytearray(), 0
    while len(out) < n:
        out += b'%d %x fallback line\n' % (i, i * 2654435761 % (1 << 32))
        i += 1
    return bytes(out[:n])


# Runs in a private mount namespace when /dev/log exists: nothing leaks out.
SCRIPT = '''set -u
zm=$1 src=$2 mnt=$3 out=$4 stat=$5
[ -e /dev/log ] && { mount --bind /dev/null /dev/log || exit 99; }
"$zm" "$src" "$mnt" -o noindex,index_dir=none 2>"$out.err"; rc=$?
[ $rc = 0 ] || exit $rc
cat "$mnt/bad" >/dev/null 2>"$out.cat"; echo $? >"$out.catrc"
"$stat" "$mnt" >"$out.stat" 2>&1
fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"
exit 0
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--tools', required=True)
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()
    require_fuse()
    res = Results()
    stat = os.path.join(a.tools, 'zmount-stat')
    if not zmtest.binary_ok(res, a.zmount) or not zmtest.binary_ok(res, stat):
        return res.finish()
    top = tempfile.mkdtemp(prefix='zm-logfb.')
    try:
        src, mnt, state = (os.path.join(top, d) for d in ('src', 'mnt', 'state'))
        for d in (src, mnt):
            os.makedirs(d)
        blob = bytearray(subprocess.run(['xz', '-0', '-T1', '-c'], input=text(1 << 20),
                                        stdout=subprocess.PIPE, check=True).stdout)
        blob[len(blob) // 2] ^= 0x55  # inside the one Block: its Check fails
        with open(os.path.join(src, 'bad.xz'), 'wb') as f:
            f.write(blob)
        out = os.path.join(top, 'run')
        cmd = ['sh', '-c', SCRIPT, 'sh', a.zmount, src, mnt, out, stat]
        if os.path.exists('/dev/log'):
            if shutil.which('unshare') is None:
                res.fail('unshare is needed to hide this machine\'s /dev/log')
                return res.finish()
            Results.note('this machine has /dev/log: hiding it in a private mount namespace')
            cmd = ['unshare', '-m', '--propagation', 'private'] + cmd
        env = dict(os.environ, XDG_STATE_HOME=state)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120, text=True)
        if not res.check('the background mount ran (exit 0)', p.returncode == 0,
                         f'rc {p.returncode} {p.stdout!r}'):
            return res.finish()

        def read(suffix):
            try:
                with open(out + suffix, errors='replace') as f:
                    return f.read()
            except OSError as e:
                return f'<{e}>'
        logf = os.path.join(state, 'zmount', 'zmount.log')
        err = read('.err').splitlines()
        res.check('stderr before detaching: one line naming /dev/log and the fallback file',
                  len(err) == 1 and '/dev/log' in err[0] and logf in err[0], f'stderr {err}')
        res.check('the read of the damaged file failed (EIO)',
                  read('.catrc').strip() != '0' and 'Input/output error' in read('.cat'),
                  read('.cat'))
        try:
            with open(logf, errors='replace') as f:
                lines = f.read().splitlines()
        except OSError as e:
            lines = [f'<{e}>']
        hits = [ln for ln in lines if 'bad.xz' in ln and 'offset' in ln and ': error: ' in ln]
        res.check('the fallback file holds the error line naming the file and offset',
                  len(hits) >= 1 and ' zmount[' in hits[0], '\n'.join(lines))
        res.check('zmount-stat shows where the log goes', f'\nlog        {logf}' in read('.stat'),
                  read('.stat'))
    finally:
        zmtest.cleanup_top(top, a.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
