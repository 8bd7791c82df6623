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
Cut short versus corrupt, in every format's words (a mount with timeout=0):
  a .xz (one Block, as xz writes by default), a .gz and a .zst each cut at
      half: their error= says "cut short at compressed offset N" and "(still
      being written, or truncated)", never "corrupt"; a .gz with a flipped
      byte and a .xz with a flipped byte in its Index still say corrupt;
  a .xz still being written (half of it, then the rest appended in place):
      first its reason says cut short, then, the file's size and mtime having
      changed, the next lookup probes it again and it reads as the whole log;
  a cut x.xz beside a good x.zst: x shows the .zst's bytes, and x.xz stays
      visible under its own name with its raw bytes; the same beside a .gz.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

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


def pack(tool, data):
    return subprocess.run([tool, '-c'], input=data, stdout=subprocess.PIPE, check=True).stdout


def read_file(path):
    with open(path, 'rb') as f:
        return f.read()


def error_of(path):
    """error= of user.zmount.info, after a read (a gzip's damage shows at its pass)."""
    read_all(path)
    try:
        kv, text = info_of(path)
    except OSError as e:
        return f'(no user.zmount.info: {e})'
    return kv.get('error', text)


def cut_or_corrupt(res, zmount, work):
    """Cut short and corrupt told apart; a file still being written; collisions."""
    src, mnt = os.path.join(work, 'src2'), os.path.join(work, 'mnt2')
    os.mkdir(src)
    os.mkdir(mnt)
    text = b''.join(b'2026-12-02T03:%02d:%02d host db[9]: query %d rows %d\n'
                    % (i // 60 % 60, i % 60, i, i * 17 % 911) for i in range(40000))
    xz, gz, zst = pack('xz', text), pack('gzip', text), pack('zstd', text)
    bad_gz = bytearray(gz)
    bad_gz[len(gz) // 2] ^= 0x55
    bad_xz = bytearray(xz)
    bad_xz[-16] ^= 0x01  # in the Index (the Footer is the last 12 bytes)
    files = {'cut.xz.log.xz': xz[:len(xz) // 2], 'cut.gz.log.gz': gz[:len(gz) // 2],
             'cut.zst.log.zst': zst[:len(zst) // 2], 'flip.gz.log.gz': bytes(bad_gz),
             'flip.xz.log.xz': bytes(bad_xz), 'live.log.xz': xz[:len(xz) // 2],
             'pair.log.xz': xz[:len(xz) // 3], 'pair.log.zst': pack('zstd', text[:100000]),
             'pair2.log.xz': xz[:len(xz) // 3], 'pair2.log.gz': pack('gzip', text[:200000])}
    for name, data in files.items():
        with open(os.path.join(src, name), 'wb') as f:
            f.write(data)
    with zmtest.Mount(zmount, src, mnt, opts='index_dir=none,noindex,timeout=0', results=res,
                      log_path=os.path.join(work, 'cut.log')) as m:
        for fmt in ('xz', 'gz', 'zst'):
            why = error_of(os.path.join(mnt, f'cut.{fmt}.log'))
            res.check(f'cut .{fmt}: error= says cut short, not corrupt',
                      'cut short at compressed offset' in why
                      and '(still being written, or truncated)' in why and 'corrupt' not in why,
                      why, info=why)
        for fmt in ('xz', 'gz'):
            why = error_of(os.path.join(mnt, f'flip.{fmt}.log'))
            res.check(f'flipped .{fmt}: error= still says corrupt',
                      'corrupt' in why and 'cut short' not in why, why, info=why)

        p = os.path.join(mnt, 'live.log')
        why = error_of(p)
        res.check('half-written .xz: error= says it may still be being written',
                  'still being written' in why, why)
        with open(os.path.join(src, 'live.log.xz'), 'ab') as f:
            f.write(xz[len(xz) // 2:])
        got = b''
        for _ in range(100):  # the listing is kept at least 0.1 s: wait for the change to show
            try:
                got = read_file(p)
            except OSError:
                got = b''
            if got == text:
                break
            time.sleep(0.1)
        res.check('half-written .xz, once finished, reads as the whole log',
                  got == text, f'{len(got)} bytes, want {len(text)}')

        names = sorted(os.listdir(mnt))
        for pair, good, tool in (('pair.log', 'pair.log.zst', 'zstd'),
                                 ('pair2.log', 'pair2.log.gz', 'gzip')):
            want = subprocess.run([tool, '-dc', os.path.join(src, good)],
                                  stdout=subprocess.PIPE, check=True).stdout
            try:
                got = read_file(os.path.join(mnt, pair))
            except OSError as e:
                got = f'{e}'.encode()
            res.check(f'a cut {pair}.xz does not hide a good {good}: {pair} shows its bytes',
                      got == want, f'{len(got)} bytes, want the {len(want)} of {good}; '
                      f'listing {names}')
            raw = os.path.join(mnt, pair + '.xz')
            try:
                got = read_file(raw)
            except OSError as e:
                got = f'{e}'.encode()
            res.check(f'{pair}.xz stays visible under its own name, raw',
                      got == files[pair + '.xz'], f'{len(got)} bytes; listing {names}')
        lines = [ln for ln in m.log_lines() if 'pair.log.xz' in ln]
        res.check('the cut pair.log.xz has a log line with its reason',
                  any('cut short' in ln for ln in lines), '\n'.join(lines) or 'no line')


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
        cut_or_corrupt(res, args.zmount, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
