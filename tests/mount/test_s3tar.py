#!/usr/bin/env python3
"""-o tar over an S3 prefix (issue 34) against the real Ceph RGW of tests/s3/rgw.sh
(ZMOUNT_S3_DIR, ctest fixture s3_rgw; a missing gateway FAILS).

The prefix holds b.tar.gz and c.tar.xz (one Block, as xz writes by default) of one member
tree (log files, a subdirectory, an empty file, a symlink), and the mounts use
index_dir=s3://BUCKET/PREFIX/idx of their own.  Checks:
  - mount A: each shows as a directory NAME.tar/ whose names are tar -tf's; every regular
    member's bytes equal `tar -xOf ARCHIVE MEMBER`, and reads at offsets inside the
    largest member do; the symlink shows its target;
  - after A: one .zmt object per archive under the index prefix;
  - mount B, fresh: lists the same names with no byte decoded (decoded_bytes=0, the
    tables came from the prefix), and a member read after that is exact.
Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zmtest  # noqa: E402
from test_s3mount import Gateway, text_bytes  # noqa: E402

ARCHIVES = {'b.tar.gz': ['-z'], 'c.tar.xz': ['-J']}


def make_tree(top):
    """The member tree; returns its directory."""
    d = os.path.join(top, 'members')
    os.makedirs(os.path.join(d, 'logs', 'old'))
    sizes = {'logs/app.log': 3 << 20, 'logs/old/app.log.1': 700000, 'logs/db.log': 5000,
             'README': 100, 'empty': 0}
    for i, (name, n) in enumerate(sorted(sizes.items())):
        with open(os.path.join(d, name), 'wb') as f:
            f.write(text_bytes(n, 30 + i))
    os.symlink('logs/app.log', os.path.join(d, 'current'))
    return d


def index_keys(gw, prefix, ext):
    p = gw.curl([f'{gw.endpoint}/{gw.bucket}?list-type=2&prefix={prefix.replace("/", "%2F")}'])
    if p.returncode != 0:
        raise RuntimeError(f'LIST {prefix}: {p.stderr.decode(errors="replace")}')
    text = p.stdout.decode()
    return sorted(k for k in (s.split('</Key>')[0] for s in text.split('<Key>')[1:])
                  if k.endswith(ext))


def tar_names(path):
    """tar -tf's names in normal form (no ./, no trailing /), the root left out."""
    out = subprocess.run(['tar', '-tf', path], stdout=subprocess.PIPE, check=True).stdout
    names = set()
    for ln in out.decode().splitlines():
        n = ln[2:] if ln.startswith('./') else ln
        n = n.rstrip('/')
        if n and n != '.':
            names.add(n)
    return sorted(names)


def names_under(root):
    return sorted(os.path.relpath(os.path.join(d, n), root)
                  for d, dirs, files in os.walk(root) for n in dirs + files)


def member_bytes(arc, name):
    return subprocess.run(['tar', '-xOf', arc, './' + name], stdout=subprocess.PIPE,
                          check=True).stdout


def check_members(res, label, arc, mdir):
    """Names, every regular member's bytes, 100 reads at offsets in the largest."""
    want = tar_names(arc)
    try:
        got = names_under(mdir)
    except OSError as e:
        res.fail(f'{label}: listed', str(e))
        return
    res.check(f'{label}: the names of tar -tf', got == want, f'shown {got}, want {want}')
    bad, largest = [], (b'', None)
    for n in want:
        p = os.path.join(mdir, n)
        if os.path.islink(p) or os.path.isdir(p):
            continue
        data = member_bytes(arc, n)
        with open(p, 'rb') as f:
            if f.read() != data:
                bad.append(n)
        if len(data) > len(largest[0]):
            largest = (data, p)
    res.check(f'{label}: every member equals tar -xOf', not bad, f'differ: {bad}')
    res.check(f'{label}: the symlink shows its target',
              os.readlink(os.path.join(mdir, 'current')) == 'logs/app.log')
    data, p = largest
    rnd = random.Random(34)
    wrong = []
    with open(p, 'rb') as f:
        for _ in range(100):
            off = rnd.randrange(len(data))
            if os.pread(f.fileno(), 4096, off) != data[off:off + 4096]:
                wrong.append(off)
    res.check(f'{label}: 100 reads at offsets in {os.path.basename(p)}', not wrong,
              f'bad offsets {wrong[:5]}')


def mount(args, res, gw, top, pre, label):
    mnt = os.path.join(top, f'mnt-{label}')
    opts = (f'tar,endpoint={gw.endpoint},credentials={gw.credfile},'
            f'index_dir=s3://{gw.bucket}/{pre}idx')
    return zmtest.Mount(args.zmount, f's3://{gw.bucket}/{pre}data', mnt, opts, results=res,
                        watchdog=300, log_path=os.path.join(top, f'{label}.log'),
                        mount_timeout=60, label=label), mnt


def run(args, res, gw, top):
    pre = f'zm-s3tar-{os.getpid()}-{int(time.time())}/'
    members = make_tree(top)
    local = {}
    for name, flag in ARCHIVES.items():
        local[name] = os.path.join(top, name)
        subprocess.run(['tar', '-C', members] + flag + ['-cf', local[name], '.'], check=True)
        gw.put(pre + 'data/' + name, local[name])
    m, mnt = mount(args, res, gw, top, pre, 'A')
    with m:
        for name in ARCHIVES:
            shown = os.path.join(mnt, name.split('.')[0] + '.tar')
            res.check(f'A: {name} shows as a directory', os.path.isdir(shown))
            check_members(res, f'A {name}', local[name], shown)
    keys = index_keys(gw, pre + 'idx', '.zmt')
    res.check('A saved one .zmt object per archive under the index prefix',
              len(keys) == len(ARCHIVES), f'{keys}')
    m, mnt = mount(args, res, gw, top, pre, 'B')
    with m:
        got = {n: names_under(os.path.join(mnt, n.split('.')[0] + '.tar')) for n in ARCHIVES}
        dec = zmtest.stats(mnt).get('decoded_bytes')
        res.check('B listed both with no byte decoded (tables loaded from the prefix)',
                  dec == 0, f'decoded_bytes={dec}')
        for name in ARCHIVES:
            res.check(f'B {name}: the names of tar -tf', got[name] == tar_names(local[name]))
            with open(os.path.join(mnt, name.split('.')[0] + '.tar', 'logs', 'db.log'),
                      'rb') as f:
                res.check(f'B {name}: a member reads exact after the loaded table',
                          f.read() == member_bytes(local[name], 'logs/db.log'))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--keep', action='store_true')
    args = ap.parse_args()
    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, args.zmount):
        return res.finish()
    d = os.environ.get('ZMOUNT_S3_DIR', '')
    if not d or not os.path.isfile(os.path.join(d, 'endpoint')):
        res.fail('the RGW of tests/s3/rgw.sh is up', f'ZMOUNT_S3_DIR={d!r} has no endpoint file')
        return res.finish()
    top = tempfile.mkdtemp(prefix='zm-s3tar-')
    try:
        run(args, res, Gateway(d), top)
    finally:
        zmtest.cleanup_top(top, args.keep)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
