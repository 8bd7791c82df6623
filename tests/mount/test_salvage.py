#!/usr/bin/env python3
"""test_salvage.py -- -o salvage shows the good start of damaged archives.

usage: test_salvage.py --zmount PATH

Source tree: a log cut short after 60% as .gz (one member) and as .xz
(64 KiB Blocks, so its Index is gone), a .gz with a corrupt byte in the
middle, and intact copies of both formats.
  without salvage, one rule for both: the cut .gz and the cut .xz (its
      Index gone) show under the stripped name, their opens fail with EIO,
      and one log line names each and points to -o salvage.
  with -o salvage: the cut .gz shows exactly what `gzip -dc` prints before
      its error (size and bytes); the .gz with a flipped byte in its only
      member shows nothing (that member failed); the cut .xz (64 KiB Blocks)
      and a cut .xz of one Block (xz's default) each show exactly what
      `xz -dc` prints before its error (size and bytes), the start of the
      Block the file ends in included (unverified: its Check is gone);
      a one-Block .xz still being written shows what xz -dc prints of it,
      and once the rest is appended it reads whole, state=indexed;
      user.zmount.info says state=salvaged and the log has one line per file
      saying salvage is in effect; intact files read exactly as without it.
  two-member .gz files, each damaged in member 2 (its deflate data, its
      CRC32, cut short inside it) and one with garbage after both members:
      the exact size shown is member 1's bytes for the first two (member 2
      failed a check: none of its bytes), all of `gzip -dc`'s output for the
      cut and for the garbage; what shows is always a prefix of gzip -dc's.
  afterwards, without salvage but with the same index_dir: the cut .gz fails
      again (its salvaged index was never saved), the intact one loads its own.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402

BLOCK = 64 * 1024


def make_tree(src):
    text = b''.join(b'2026-11-30T12:%02d:%02d host app[42]: request %d served in %d ms\n'
                    % (i // 60 % 60, i % 60, i, i * 7 % 300) for i in range(60000))
    with open(os.path.join(src, 'whole.log'), 'wb') as f:
        f.write(text)
    gz = subprocess.run(['gzip', '-c'], input=text, stdout=subprocess.PIPE, check=True).stdout
    xz = subprocess.run(['xz', '-T1', f'--block-size={BLOCK}', '-c'], input=text,
                        stdout=subprocess.PIPE, check=True).stdout
    os.mkdir(os.path.join(src, 'x'))
    one = subprocess.run(['xz', '-c'], input=text, stdout=subprocess.PIPE, check=True).stdout
    for name, data in (('cut.log.gz', gz[:len(gz) * 6 // 10]), ('x/cut.log.xz', xz[:len(xz) * 6 // 10]),
                       ('x/one.log.xz', one[:len(one) // 2]), ('x/grow.log.xz', one[:len(one) // 3]),
                       ('ok.log.gz', gz), ('x/ok.log.xz', xz)):
        with open(os.path.join(src, name), 'wb') as f:
            f.write(data)
    bad = bytearray(gz)
    bad[len(bad) // 2] ^= 0x55
    with open(os.path.join(src, 'flip.log.gz'), 'wb') as f:
        f.write(bad)
    os.unlink(os.path.join(src, 'whole.log'))
    return text, one


def make_members(src):
    """Two members; four ways of damaging the second.  Returns {name: (member 1's
    text, what must show: 'm1' for member 1's bytes, 'zcat' for all of gzip -dc's)}."""
    lines = [b'%06d member text %d\n' % (i, i * 31 % 977) for i in range(40000)]
    t1, t2 = b''.join(lines[:20000]), b''.join(lines[20000:])
    m1, m2 = gzip.compress(t1, 6), gzip.compress(t2, 6)
    # the first byte of member 2's deflate data whose flip inflate itself notices
    for off in range(10 + len(m2) // 3, len(m2) - 8):
        bad = bytearray(m2)
        bad[off] ^= 0xFF
        try:
            zlib.decompressobj(31).decompress(bytes(bad))
        except zlib.error as e:
            if 'incorrect data check' not in str(e):
                break
    flip = bytes(bad)
    crc = bytearray(m2)
    crc[-8] ^= 0x01
    cases = {'m-flip.gz': (m1 + flip, 'm1'), 'm-crc.gz': (m1 + bytes(crc), 'm1'),
             'm-cut.gz': (m1 + m2[:len(m2) // 2], 'zcat'),
             'm-garbage.gz': (m1 + m2 + b'not a member at all\n', 'zcat')}
    for name, (data, _) in cases.items():
        with open(os.path.join(src, name), 'wb') as f:
            f.write(data)
    return t1, {name: rule for name, (_, rule) in cases.items()}


def zcat_prefix(path):
    return subprocess.run(['gzip', '-dc', path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout


def xzcat_prefix(path):
    return subprocess.run(['xz', '-dc', path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def one_rule(res, m, path, raw_path):
    """A damaged .gz or .xz without salvage: shown under the stripped name, size 0,
    its open fails with EIO, nothing under its own name, and exactly one log line
    names it and points to -o salvage."""
    tag = f'without salvage: {os.path.basename(raw_path)}'
    res.check(f'{tag}: shown under the stripped name, not raw',
              os.path.lexists(path) and not os.path.lexists(raw_path),
              f'stripped name {"exists" if os.path.lexists(path) else "missing"}, '
              f'own name {"exists" if os.path.lexists(raw_path) else "missing"}')
    try:
        size = os.stat(path).st_size
        res.check(f'{tag}: size 0', size == 0, f'size {size}')
        read(path)
        res.fail(f'{tag}: open fails with EIO', f'it read (size {size})')
    except OSError as e:
        res.check(f'{tag}: open fails with EIO', e.errno == 5, str(e))
    name = os.path.basename(raw_path)
    lines = [ln for ln in m.log_lines() if name in ln and ('error' in ln or 'warning' in ln)]
    res.check(f'{tag}: one log line, and it points to -o salvage',
              len(lines) == 1 and '-o salvage' in lines[0], '\n'.join(lines) or 'no line')


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zmount', required=True)
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    work = tempfile.mkdtemp(prefix='zmount-salvage-')
    src, mnt = os.path.join(work, 'src'), os.path.join(work, 'mnt')
    os.mkdir(src)
    os.mkdir(mnt)
    try:
        text, one = make_tree(src)
        t1, members = make_members(src)
        with zmtest.Mount(args.zmount, src, mnt, opts='index_dir=none', results=res,
                          log_path=os.path.join(work, 'plain.log')) as m:
            for rel, src_name in (('cut.log', 'cut.log.gz'), ('x/cut.log', 'x/cut.log.xz')):
                one_rule(res, m, os.path.join(mnt, rel), os.path.join(mnt, src_name))
        idx = os.path.join(work, 'idx')
        os.mkdir(idx, 0o700)
        with zmtest.Mount(args.zmount, src, mnt, opts=f'index_dir={idx},salvage,timeout=0', results=res,
                          log_path=os.path.join(work, 'salvage.log')) as m:
            want = zcat_prefix(os.path.join(src, 'cut.log.gz'))
            p = os.path.join(mnt, 'cut.log')
            got = read(p)
            res.check('salvage: the cut .gz shows what gzip -dc prints before its error',
                      got == want and os.stat(p).st_size == len(want) and len(want) > 0,
                      f'{len(got)} bytes, gzip -dc gave {len(want)}',
                      info=f'{len(got)} of {len(text)} bytes')
            p = os.path.join(mnt, 'flip.log')
            want = zcat_prefix(os.path.join(src, 'flip.log.gz'))
            got = read(p)
            res.check('salvage: a .gz with a flipped byte in its only member shows nothing',
                      got == b'' and os.stat(p).st_size == 0 and len(want) > 0,
                      f'{len(got)} bytes shown, gzip -dc gave {len(want)}')
            for name, rule in sorted(members.items()):
                want = zcat_prefix(os.path.join(src, name))
                size = len(t1) if rule == 'm1' else len(want)
                p = os.path.join(mnt, name[:-3])
                got = read(p)
                res.check(f'salvage: {name} shows exactly {"member 1" if rule == "m1" else "gzip -dc"}',
                          os.stat(p).st_size == size and got == want[:size]
                          and want.startswith(t1) and len(want) > len(t1),
                          f'{len(got)} bytes shown (size {os.stat(p).st_size}), want {size}; '
                          f'gzip -dc gave {len(want)}, member 1 is {len(t1)}',
                          info=f'{size} of gzip -dc\'s {len(want)} bytes')
            names = os.listdir(os.path.join(mnt, 'x'))
            res.check('salvage: the cut .xz shows decompressed', 'cut.log' in names
                      and 'cut.log.xz' not in names, f'{names}')
            for name in ('cut.log', 'one.log'):
                p = os.path.join(mnt, 'x', name)
                want = xzcat_prefix(os.path.join(src, 'x', name + '.xz'))
                got = read(p) if name in names else b''
                res.check(f'salvage: the cut x/{name}.xz shows what xz -dc prints before its error',
                          got == want and os.stat(p).st_size == len(want) and len(want) > 0
                          and text.startswith(want),
                          f'{len(got)} bytes (size {os.stat(p).st_size}), xz -dc gave {len(want)}',
                          info=f'{len(got)} of {len(text)} bytes')
            res.check('salvage: intact xz reads exactly', read(os.path.join(mnt, 'x', 'ok.log')) == text)
            p = os.path.join(mnt, 'x', 'grow.log')
            want = xzcat_prefix(os.path.join(src, 'x', 'grow.log.xz'))
            got = read(p)
            res.check('salvage: a .xz still being written shows what xz -dc prints of it',
                      got == want and len(want) > 0, f'{len(got)} bytes, xz -dc gave {len(want)}')
            with open(os.path.join(src, 'x', 'grow.log.xz'), 'ab') as f:
                f.write(one[len(one) // 3:])
            for _ in range(100):  # until the lookup sees the new size (timeout=0)
                got = read(p)
                if got == text:
                    break
                time.sleep(0.1)
            info = os.getxattr(p, 'user.zmount.info').decode()
            res.check('salvage: once finished, it reads whole and is no longer salvaged',
                      got == text and 'state=indexed' in info,
                      f'{len(got)} of {len(text)} bytes; {info}')
            info = os.getxattr(os.path.join(mnt, 'cut.log'), 'user.zmount.info').decode()
            res.check('salvage: user.zmount.info says state=salvaged', 'state=salvaged' in info, info)
            res.check('salvage: intact files read exactly', read(os.path.join(mnt, 'ok.log')) == text)
            lines = [ln for ln in m.log_lines() if 'salvage:' in ln]
            res.check('salvage: the log says salvage is in effect for each damaged file',
                      all(any(n in ln for ln in lines)
                          for n in ('cut.log.gz', 'flip.log.gz', 'cut.log.xz')), '\n'.join(lines))
        # A salvaged index is never saved: a later mount without salvage must
        # not load it and serve the cut file as if it were whole.
        with zmtest.Mount(args.zmount, src, mnt, opts=f'index_dir={idx}', results=res,
                          log_path=os.path.join(work, 'after.log')):
            try:
                read(os.path.join(mnt, 'cut.log'))
                res.fail('after salvage, a plain mount still fails the cut .gz', 'it read')
            except OSError as e:
                res.check('after salvage, a plain mount still fails the cut .gz', e.errno == 5,
                          str(e))
            whole = read(os.path.join(mnt, 'ok.log')) == text  # loads it, if not loaded yet
            st = zmtest.stats(mnt)
            res.check('after salvage, the intact .gz loads its saved index',
                      whole and st.get('indexes_loaded', 0) >= 1, f'{st}')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
