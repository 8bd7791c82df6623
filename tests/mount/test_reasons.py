#!/usr/bin/env python3
"""test_reasons.py -- why an archive fails is told as data, not as strerror.

usage: test_reasons.py --zmount PATH --tools DIR

Source tree: a log cut short after 40% as .gz, and as .xz (64 KiB Blocks) with
one byte flipped in the middle, so that its Index reads but a Block fails.
  the cut .gz: reading it fails with EIO; user.zmount.info says state=corrupt
      and error= names the compressed offset (not "Invalid argument");
  the flipped .xz: opens; reading through the bad Block fails with EIO;
      user.zmount.info then says state=damaged and error= gives the read
      error line, offset and compressed offset; the daemon's log has the same
      line (the context's default sink goes to the log);
  zmount-info on the cut .gz prints the same reason in its error column.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

BLOCK = 64 * 1024


def make_tree(src):
    text = b''.join(b'2026-12-01T01:%02d:%02d host app[7]: job %d took %d ms\n'
                    % (i // 60 % 60, i % 60, i, i * 13 % 500) for i in range(60000))
    gz = subprocess.run(['gzip', '-c'], input=text, stdout=subprocess.PIPE, check=True).stdout
    xz = bytearray(subprocess.run(['xz', '-T1', f'--block-size={BLOCK}', '-c'], input=text,
                                  stdout=subprocess.PIPE, check=True).stdout)
    xz[len(xz) // 2] ^= 0x55
    with open(os.path.join(src, 'cut.log.gz'), 'wb') as f:
        f.write(gz[:len(gz) * 4 // 10])
    with open(os.path.join(src, 'flip.log.xz'), 'wb') as f:
        f.write(xz)
    return text


def info_of(path):
    """user.zmount.info as a dict (the last value of each key)."""
    text = os.getxattr(path, 'user.zmount.info').decode()
    return dict(ln.split('=', 1) for ln in text.splitlines() if '=' in ln), text


def read_all(path):
    try:
        with open(path, 'rb') as f:
            while f.read(1 << 20):
                pass
        return 0
    except OSError as e:
        return e.errno


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--tools', required=True)
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    work = tempfile.mkdtemp(prefix='zmount-reasons-')
    src, mnt = os.path.join(work, 'src'), os.path.join(work, 'mnt')
    os.mkdir(src)
    os.mkdir(mnt)
    try:
        make_tree(src)
        with zmtest.Mount(args.zmount, src, mnt, opts='index_dir=none,noindex', results=res,
                          log_path=os.path.join(work, 'daemon.log')) as m:
            p = os.path.join(mnt, 'cut.log')
            err = read_all(p)
            res.check('the cut .gz fails with EIO', err == 5, f'errno {err}')
            kv, text = info_of(p)
            res.check('cut .gz: user.zmount.info says state=corrupt', kv.get('state') == 'corrupt',
                      text)
            res.check('cut .gz: its error= names the compressed offset',
                      'compressed offset' in kv.get('error', ''), text,
                      info=kv.get('error', ''))

            p = os.path.join(mnt, 'flip.log')
            kv, text = info_of(p)
            res.check('flipped .xz: before any read, user.zmount.info says indexed, no error=',
                      kv.get('state') == 'indexed' and 'error' not in kv, text)
            err = read_all(p)
            res.check('flipped .xz: reading through the bad Block fails with EIO', err == 5,
                      f'errno {err}')
            kv, text = info_of(p)
            why = kv.get('error', '')
            res.check('flipped .xz: then user.zmount.info says state=damaged',
                      kv.get('state') == 'damaged', text)
            res.check('flipped .xz: its error= is the read error line with both offsets',
                      why.startswith('read error at offset ') and 'compressed offset' in why
                      and 'Block' in why, text, info=why)
            logged = [ln for ln in m.log_lines() if 'flip.log.xz' in ln and 'read error' in ln]
            res.check('flipped .xz: the daemon log has the same reason (default sink)',
                      len(logged) == 1 and why != '' and logged[0].endswith(why),
                      '\n'.join(m.log_lines()[-10:]))

        out = subprocess.run([os.path.join(args.tools, 'zmount-info'),
                              os.path.join(src, 'cut.log.gz')],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = out.stdout.decode(errors='replace').strip()
        cols = line.split('\t')
        res.check('zmount-info: the cut .gz gets its reason, with the compressed offset',
                  out.returncode == 2 and len(cols) == 3 and cols[1] == 'error'
                  and 'compressed offset' in cols[2], f'rc {out.returncode}: {line!r}', info=line)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
