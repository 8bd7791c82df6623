#!/usr/bin/env python3
"""test_s3_conformance.py -- the conformance corpora over an S3 mount (issue 21).

usage: test_s3_conformance.py --zmount PATH --corpus DIR [--s3-dir DIR] [--reads N]
                              [--kinds gzip,xz,xz-utils] [--cases-cache DIR] [--tamper] [--keep]

--s3-dir (default $ZMOUNT_S3_DIR) is a gateway `tests/s3/rgw.sh up` made.
  1. generate the gzip and xz cases with DIR/make-{gzip,xz}-cases.sh (both at
     once), as test_conformance.py does; with --cases-cache, into that dir,
     and later runs reuse them while the generator's sha256 is the same (the
     generators are deterministic; they take 1-3 minutes on 2 busy cores);
  2. upload them and DIR/xz-utils (every file, EXPECTED.tsv too, as a local
     mount would show them) to a bucket of this run's own, under gzip/, xz/
     and xz-utils/, with curl's SigV4 (tests/s3/s3util.py), not zmount's client;
  3. per kind: mount s3://BUCKET/KIND (endpoint, credentials, a private
     index_dir) and run test_conformance.run_kind, the local test's own checks:
     check-mount.py against the EXPECTED table (one check per row), a log
     line naming every error file, no flood, unmount, daemon exit 0;
  4. delete the bucket's objects.
--tamper overwrites the object of one `ok` gzip case with another ok case's
bytes after the upload: the mount then serves bytes that are not that
file's, and the test must fail (its own failure proof).

Exit status: 0 all passed, 1 something failed, 77 FUSE not available.
The last line of output is always `N passed, M failed`.
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 's3'))
import s3util  # noqa: E402
import test_conformance as conf  # noqa: E402
import zmtest  # noqa: E402


def upload(res, g, bucket, kind, out):
    items = []
    for d, _, names in os.walk(out):
        items += [(kind + '/' + os.path.relpath(os.path.join(d, n), out), os.path.join(d, n))
                  for n in names]
    t0 = time.monotonic()
    try:
        g.put_many(bucket, items)
        n = len(g.list(bucket, kind + '/'))
    except s3util.S3Error as e:
        res.fail(f'{kind}: upload the cases', str(e))
        return False
    return res.check(f'{kind}: upload the cases to s3://{bucket}/{kind}/', n == len(items),
                     f'{n} objects listed, {len(items)} files',
                     info=f'{len(items)} objects in {time.monotonic() - t0:.1f} s')


def cases(res, a, kind, tmp):
    """The directory of kind's generated cases: made now, or reused from
    --cases-cache when its stamp names the generator's current sha256."""
    if not a.cases_cache:
        out = os.path.join(tmp, kind)
        return out if conf.generate(res, a.corpus, kind, out, False) else None
    with open(os.path.join(a.corpus, f'make-{kind}-cases.sh'), 'rb') as f:
        want = hashlib.sha256(f.read()).hexdigest()
    out = os.path.join(a.cases_cache, kind)
    stamp = out + '.sha256'
    try:
        with open(stamp) as f:
            if f.read().strip() == want and os.path.isfile(os.path.join(out, 'EXPECTED.tsv')):
                res.ok(f'{kind}: reuse the cases in {out} (generator unchanged)')
                return out
    except OSError:
        pass
    shutil.rmtree(out, ignore_errors=True)
    if os.path.exists(stamp):
        os.unlink(stamp)
    os.makedirs(a.cases_cache, exist_ok=True)
    if not conf.generate(res, a.corpus, kind, out, False):
        return None
    with open(stamp, 'w') as f:
        f.write(want + '\n')
    return out


def tamper(res, g, bucket, out):
    """Puts a second ok gzip case's bytes under the first's key."""
    ok = [r for r in conf.read_expected(out) if r['expect'] == 'ok' and int(r['usize']) > 0]
    a, b = ok[0], next(r for r in ok[1:] if r['usize'] != ok[0]['usize'])
    g.put(bucket, 'gzip/' + a['file'], path=os.path.join(out, b['file']))
    print(f'# --tamper: s3://{bucket}/gzip/{a["file"]} now holds {b["file"]}', flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--zmount', required=True)
    ap.add_argument('--corpus', required=True, help='the shared corpus dir (generators, xz-utils)')
    ap.add_argument('--s3-dir', default=os.environ.get('ZMOUNT_S3_DIR'))
    ap.add_argument('--reads', type=int, default=64, help='random preads per file (check-mount.py)')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--kinds', default='gzip,xz,xz-utils')
    ap.add_argument('--opts', default='', help='extra -o options for the daemon')
    ap.add_argument('--cases-cache', help='keep the generated cases here and reuse them')
    ap.add_argument('--tamper', action='store_true', help='break one object: the test must fail')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()

    zmtest.require_fuse()
    res = zmtest.Results()
    if not zmtest.binary_ok(res, a.zmount):
        return res.finish()
    if not a.s3_dir or not os.path.isfile(os.path.join(a.s3_dir, 'endpoint')):
        res.fail('a gateway is up', f'--s3-dir/ZMOUNT_S3_DIR {a.s3_dir!r} holds no endpoint; '
                 'run through ctest (fixture s3_rgw) or tests/s3/rgw.sh up DIR')
        return res.finish()
    a.corpus = os.path.abspath(a.corpus)
    a.big = False  # run_kind's --big cases: local only
    g = s3util.Gateway.from_dir(a.s3_dir)
    bucket = f'zmount-conf-{os.getpid()}'
    g.make_bucket(bucket)
    kinds = a.kinds.split(',')
    a.opts = ','.join(o for o in (f'endpoint={g.endpoint},region={g.region},'
                                  f'credentials={g.credfile}', a.opts) if o)
    tmp = tempfile.mkdtemp(prefix='zmount-s3-conformance-')
    print(f'# temp dir {tmp}; bucket s3://{bucket} at {g.endpoint}', flush=True)
    t_all = time.monotonic()
    try:
        outs = {'xz-utils': os.path.join(a.corpus, 'xz-utils')}
        made = {}
        gen = [k for k in kinds if k in ('gzip', 'xz')]
        threads = [threading.Thread(target=lambda k=k: made.__setitem__(k, cases(res, a, k, tmp)))
                   for k in gen]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outs.update((k, d) for k, d in made.items() if d)
        for kind in kinds:
            if kind not in outs or not upload(res, g, bucket, kind, outs[kind]):
                continue
            if a.tamper and kind == 'gzip':
                tamper(res, g, bucket, outs[kind])
            t0 = time.monotonic()
            conf.run_kind(res, a, kind, outs[kind], tmp, src=f's3://{bucket}/{kind}')
            print(f'# --- {kind}: {time.monotonic() - t0:.1f} s', flush=True)
        print(f'# total time {time.monotonic() - t_all:.1f} s', flush=True)
    finally:
        try:
            g.empty_bucket(bucket)
        except s3util.S3Error as e:
            print(f'# could not empty s3://{bucket}: {e}', flush=True)
        left = [d for d in os.listdir(tmp) if d.startswith('mnt-')
                and zmtest.is_mounted(os.path.join(tmp, d))]
        if a.keep or left:
            print(f'# kept {tmp}' + (f' (still mounted: {left})' if left else ''), flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return res.finish()


if __name__ == '__main__':
    sys.exit(main())
