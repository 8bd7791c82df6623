#!/usr/bin/env python3
"""The documentation against the program, both ways.

What the program accepts is read from the program itself: the option keys
of fs/opts.c (the `KEY("name")` lines of opts_apply), the suffixes of
the format table (the `{ ".x", "" }` suffix lists of index/fmt_*.c), the programs and man
pages that `cmake --install` writes, each program's --help, and the .deb's
description from the build's CPackConfig.cmake.  What the documentation
says is read from README.md, man/*.1 (troff turned into plain text here, so
no groff is needed), doc/recipes.md and those --help texts.

Checks:
  options   every zmount option is in `zmount --help`, the README's option
            table and zmount.1's OPTIONS; every option those three name is
            accepted: zmount's own by opts.c, FUSE's by a real mount
            (mounted with it, then unmounted); the fstab-only options that
            zmount.1 says are refused are refused.
  suffixes  every suffix the format table handles is named in the README, zmount.1 and
            `zmount --help`; no handled suffix is called "as they are"; a
            text (tool help, package description, a man section) that names
            one of xz, gzip and zstd names all three.
  programs  every installed program has a man page, a --help that starts
            "usage: NAME" and a --version, and is named in the README,
            zmount.1, doc/recipes.md and the package description; every man
            page and every program those name is installed.
  packages  a text that names one of the runtime libraries (or -dev
            packages) names them all.
  README    the sections a user needs (install, options, choosing
            cache_size, logs and troubleshooting, memory, limits,
            performance, uninstall), with what they must cover; its links
            resolve in the source tree and in the installed share/doc/zmount;
            the tests its Memory table names exist.
  facts     statements found wrong before, which must not come back: a wide
            deflate block failing with EIO; cache_size "at most 8.0 EiB";
            noindex stopping gzip indexing only (it stops the checkpoint
            passes too: --help, the README and zmount.1 must say both).

usage: test_docs.py --source DIR --build-dir DIR --cmake CMAKE
Exit 0 all passed, 1 a check failed.  When FUSE is missing the mount
checks cannot run: a loud SKIP, and exit 77 if nothing else failed.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'mount'))
import zmtest  # noqa: E402

FORMATS = {'xz': ('xz', '.xz'), 'gzip': ('gzip', '.gz'), 'zstd': ('zstd', '.zst')}


# -- reading the program ------------------------------------------------------
def opts_keys(src):
    text = open(os.path.join(src, 'fs', 'opts.c')).read()
    return set(re.findall(r'KEY\("([a-z_]+)"\)', text))


def handled_suffixes(src):
    # the formats' suffix tables (struct fmt_suffix in index/fmt_*.c: { ".xz", "" })
    out = set()
    for path in glob.glob(os.path.join(src, 'index', 'fmt_*.c')):
        out |= set(re.findall(r'\{ "(\.[a-z]+)", "', open(path).read()))
    return out


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    return p.returncode, p.stdout, p.stderr


def install_to(cmake, build, prefix):
    """cmake --install into prefix; the build's install_manifest.txt and
    zmount-install-record.txt, which list what a real install wrote (the
    README's uninstall reads the record), are put back as they were."""
    kept = {}
    for name in ('install_manifest.txt', 'zmount-install-record.txt'):
        path = os.path.join(build, name)
        kept[path] = open(path, 'rb').read() if os.path.exists(path) else None
    try:
        return run([cmake, '--install', build, '--prefix', prefix])
    finally:
        for path, saved in kept.items():
            if saved is None:
                if os.path.exists(path):
                    os.unlink(path)
            else:
                with open(path, 'wb') as f:
                    f.write(saved)


def cpack_description(build):
    text = open(os.path.join(build, 'CPackConfig.cmake')).read()
    out = []
    for key in ('CPACK_PACKAGE_DESCRIPTION', 'CPACK_PACKAGE_DESCRIPTION_SUMMARY'):
        m = re.search(r'set\(%s "((?:[^"\\]|\\.)*)"\)' % key, text)
        out.append(m.group(1) if m else '')
    return '\n'.join(out)


# -- reading troff -------------------------------------------------------------
ESCAPES = [(r'\-', '-'), (r'\(ti', '~'), (r'\(lq', '"'), (r'\(rq', '"'), (r'\(aq', "'"),
           (r'\(bu', ''), (r'\|', ''), (r'\&', ''), (r'\~', ' '), (r'\e', '\\'),
           (r'\fB', ''), (r'\fI', ''), (r'\fR', ''), (r'\fP', '')]


def unescape(s):
    for a, b in ESCAPES:
        s = s.replace(a, b)
    return s


def troff_text(path):
    """{section: [paragraph, ...]} of a man page, as plain text."""
    sections, sec, para = {}, '', []

    def flush():
        if para:
            sections.setdefault(sec, []).append(' '.join(para))
            para.clear()
    for line in open(path):
        line = line.rstrip('\n')
        if line.startswith('.\\"'):
            continue
        m = re.match(r'\.([A-Z]{1,2})\b\s*(.*)', line)
        if not m:
            para.append(unescape(line))
            continue
        mac, rest = m.groups()
        args = [a or b for a, b in re.findall(r'"([^"]*)"|(\S+)', rest)]
        if mac == 'SH':
            flush()
            sec = unescape(' '.join(args))
        elif mac in ('PP', 'IP', 'TP', 'SS', 'EX', 'EE', 'YS'):
            flush()
        elif mac in ('B', 'I', 'SY', 'OP'):
            para.append(unescape(' '.join(args)))
        elif mac in ('BR', 'BI', 'IB', 'IR', 'RB', 'RI'):
            para.append(unescape(''.join(args)))
    flush()
    return sections


def man_option_names(path):
    """Names in the .TP tags of the OPTIONS section: cache_size, -f, allow_other..."""
    names, in_opts, tag_next = set(), False, False
    for line in open(path):
        if line.startswith('.SH'):
            in_opts = line.split()[1:2] == ['OPTIONS']
        if not in_opts:
            continue
        if line.startswith('.TP'):
            tag_next = True
            continue
        if tag_next:
            tag_next = False
            text = unescape(re.sub(r'^\.\w+\s*', '', line)).replace('"', ' ')
            for tok in re.split(r'[\s,]+', text):
                m = re.match(r'^(--?[a-z][a-z-]*|[a-z][a-z_]*)(=|$)', tok)
                if m:
                    names.add(m.group(1))
    return names


def help_option_names(text):
    names = set()
    for line in text.splitlines():
        m = re.match(r'^\s+-o ([a-z_]+)', line)
        if m:
            names.add(m.group(1))
            continue
        for tok in re.findall(r'(?:^\s+|,\s*)(--?[a-zA-Z][a-z-]*)', line):
            names.add(tok)
    return names


def readme_option_names(text):
    """Names in the first cell of the README's option table (| option | default | meaning |)."""
    names, in_table = set(), False
    for line in text.splitlines():
        if re.match(r'^\|\s*option\s*\|', line):
            in_table = True
            continue
        if in_table and not line.startswith('|'):
            break
        if in_table:
            cell = line.split('|')[1]
            for tok in re.findall(r'`([^`]+)`', cell):
                m = re.match(r'^(--?[a-zA-Z][a-z-]*|[a-z][a-z_]*)(=|$)', tok)
                if m:
                    names.add(m.group(1))
    return names


def paragraphs(text):
    """Markdown paragraphs and list items, each on one line."""
    return [p.replace('\n', ' ') for p in re.split(r'\n\s*\n|\n(?=\s*[-*] |\s*\d+\. )', text)]


def names_format(text, fmt):
    word, suffix = FORMATS[fmt]
    return re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(word), text) is not None or \
        re.search(r'%s(?![a-z])' % re.escape(suffix), text) is not None


def names_suffix(text, suffix):
    return re.search(r'%s(?![a-z])' % re.escape(suffix), text) is not None


# -- mounting with an option ------------------------------------------------------
def mounts_with(zmount, work, opts, extra=()):
    """(True, '') if zmount mounts SRC with these options and exits 0 at unmount."""
    src, mnt = os.path.join(work, 'src'), os.path.join(work, 'mnt')
    os.makedirs(src, exist_ok=True)
    log = os.path.join(work, 'daemon.log')
    try:
        m = zmtest.Mount(zmount, src, mnt, opts=opts, log_path=log, extra_args=extra,
                         watchdog=60, label=f'zmount -o {opts}')
        with m:
            pass
    except zmtest.MountError as e:
        return False, str(e).splitlines()[0] + ' ' + m.log_tail(3).strip()
    return m.returncode == 0, f'exit status {m.returncode}'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--source', required=True)
    ap.add_argument('--build-dir', required=True)
    ap.add_argument('--cmake', default='cmake')
    a = ap.parse_args()
    src = os.path.abspath(a.source)
    res = zmtest.Results()
    readme = open(os.path.join(src, 'README.md')).read()
    recipes = open(os.path.join(src, 'doc', 'recipes.md')).read()
    man_dir = os.path.join(src, 'man')
    zman = troff_text(os.path.join(man_dir, 'zmount.1'))
    zman_all = '\n\n'.join(p for ps in zman.values() for p in ps)

    with tempfile.TemporaryDirectory(prefix='zmount-docs-') as tmp:
        prefix = os.path.join(tmp, 'prefix')
        rc, out, err = install_to(a.cmake, a.build_dir, prefix)
        if rc != 0:
            res.fail('cmake --install into a temporary prefix', err.strip())
            sys.exit(res.finish())
        bindir = os.path.join(prefix, 'bin')
        programs = sorted(os.listdir(bindir))
        man1 = os.path.join(prefix, 'share', 'man', 'man1')
        man_pages = sorted(re.sub(r'\.1(\.gz)?$', '', f) for f in os.listdir(man1))
        helps = {}
        for p in programs:
            rc, out, err = run([os.path.join(bindir, p), '--help'])
            helps[p] = out
            res.check(f'{p} --help exits 0 with "usage: {p}" on stdout',
                      rc == 0 and out.startswith(f'usage: {p} '), f'exit {rc}, {out[:60]!r}')
            rc, out, _ = run([os.path.join(bindir, p), '--version'])
            res.check(f'{p} --version exits 0 and names {p}', rc == 0 and out.startswith(p),
                      f'exit {rc}, {out[:60]!r}')
        zmount = os.path.join(bindir, 'zmount')
        desc = cpack_description(a.build_dir)

        # -- programs ------------------------------------------------------------
        res.check('the install has programs', bool(programs) and 'zmount' in programs,
                  f'bin/: {programs}')
        for p in programs:
            res.check(f'{p} has an installed man page', p in man_pages, f'man1/: {man_pages}')
            for where, text in (('README.md', readme), ('zmount.1', zman_all),
                                ('doc/recipes.md', recipes), ('the package description', desc)):
                res.check(f'{where} names {p}',
                          re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(p), text) is not None)
        for m in man_pages:
            res.check(f'man page {m}.1 is for an installed program', m in programs,
                      f'bin/: {programs}')
        named = set(re.findall(r'\bzmount-[a-z]+\b', ' '.join(zman.get('SEE ALSO', [])) + desc))
        for p in sorted(named):
            res.check(f'{p}, named in zmount.1 SEE ALSO or the package description, is installed',
                      p in programs)

        # -- options -------------------------------------------------------------
        keys = opts_keys(src)
        res.check('fs/opts.c has option keys', len(keys) >= 5, f'{sorted(keys)}')
        in_help = help_option_names(helps.get('zmount', ''))
        in_readme = readme_option_names(readme)
        in_man = man_option_names(os.path.join(man_dir, 'zmount.1'))
        for k in sorted(keys):
            res.check(f'option {k} is in zmount --help', k in in_help)
            res.check(f'option {k} is in the README option table', k in in_readme)
            res.check(f'option {k} is in zmount.1 OPTIONS', k in in_man)
        documented = in_help | in_readme | in_man
        # -h/--help/-V/--version were run above; the rest must mount.
        to_mount = sorted(documented - keys - {'-h', '--help', '-V', '--version'})
        res.check('zmount.1 documents FUSE options', {'allow_other', '-f'} <= in_man,
                  f'{sorted(in_man)}')

        # fstab options zmount.1 says are refused with "fuse: unknown option(s)"
        refused = []
        for p in zman.get('OPTIONS', []):
            if 'unknown option(s)' in p:
                refused = re.findall(r'\b(defaults|noauto|nofail|_netdev|users?)\b', p)
        res.check('zmount.1 names the fstab options that zmount refuses', len(refused) >= 3,
                  f'{refused}')

        # -- suffixes and formats --------------------------------------------------
        sufs = handled_suffixes(src)
        res.check('the format table handles .xz, .gz and .zst', {'.xz', '.gz', '.zst'} <= sufs,
                  f'{sorted(sufs)}')
        for s in sorted(sufs):
            for where, text in (('README.md', readme), ('zmount.1', zman_all),
                                ('zmount --help', helps.get('zmount', ''))):
                res.check(f'{where} names the suffix {s}', names_suffix(text, s))
        as_is = [('README.md', p) for p in paragraphs(readme)] + \
                [('zmount.1', p) for p in zman_all.split('\n\n')]
        for where, p in as_is:
            if not re.search(r'as they are|pass(es)? through', p):
                continue
            for s in sorted(sufs):
                res.check(f'{where}: the handled suffix {s} is not said to show "as they are"',
                          not re.search(r'(?<![\w.])%s(?![a-z])' % re.escape(s), p)
                          or not re.search(r'\.(lzma|lz|bz2)\b', p),
                          p[:160])
        texts = [(f'{p} --help', helps[p]) for p in programs] + \
                [('the package description', desc)] + \
                [(f'zmount.1 {s}', ' '.join(zman.get(s, [])))
                 for s in ('NAME', 'DESCRIPTION', 'INTEGRITY AND ERRORS')] + \
                [(f'{m}.1 {s}', ' '.join(troff_text(os.path.join(man_dir, m + '.1')).get(s, [])))
                 for m in man_pages if m != 'zmount' for s in ('NAME', 'DESCRIPTION')
                 if (m, s) != ('zmount-index', 'NAME')]  # xz has no index to keep
        for where, text in texts:
            named = [f for f in FORMATS if names_format(text, f)]
            if named:
                res.check(f'{where} names all of xz, gzip and zstd, not only {named}',
                          len(named) == len(FORMATS))

        # -- packages ------------------------------------------------------------------
        # The .deb's Depends (dpkg-shlibdeps) less libc6 and libgcc-s1; the
        # build needs the -dev package of each (source/ builds on libcurl's headers).
        groups = (('runtime libraries', ('libcurl4', 'libfuse3-3', 'liblzma5', 'libzstd1',
                                         'zlib1g')),
                  ('-dev packages', ('libcurl4-openssl-dev', 'libfuse3-dev', 'liblzma-dev',
                                     'libzstd-dev', 'zlib1g-dev')))
        docs = [('README.md', readme), ('doc/recipes.md', recipes),
                ('packaging/CPack.cmake', open(os.path.join(src, 'packaging', 'CPack.cmake')).read())]
        for where, text in docs:
            for what, pkgs in groups:
                named = [p for p in pkgs if re.search(r'(?<![\w-])%s(?![\w-])' % p, text)]
                if named:
                    res.check(f'{where} names all the {what} or none: {", ".join(pkgs)}',
                              len(named) == len(pkgs), f'only {named}')

        # -- the README as a user's front door ------------------------------------------
        sections = dict((m.group(1), m.start()) for m in re.finditer(r'^## (.+)$', readme, re.M))
        for want in ('Install', 'Options', 'Choosing cache_size', 'Logs and troubleshooting',
                     'Memory', 'Limits', 'Performance', 'Uninstall'):
            res.check(f'README.md has a "## {want}" section', want in sections,
                      f'sections: {list(sections)}')

        def section(name):
            start = sections.get(name, len(readme))
            nxt = [s for s in sections.values() if s > start]
            return readme[start:min(nxt) if nxt else len(readme)]
        for what in ('/dev/log', 'log_file', '/dev/fuse', 'journalctl'):
            res.check(f'README.md "Logs and troubleshooting" covers {what}',
                      what in section('Logs and troubleshooting'))
        for what in ('~/.cache/zmount', 'zmount-index prune', 'install_manifest.txt'):
            res.check(f'README.md "Uninstall" covers {what}', what in section('Uninstall'))
        docdir = os.path.join(prefix, 'share', 'doc', 'zmount')
        for link in sorted(set(re.findall(r'\]\(([^)#:]+)\)', readme))):
            res.check(f'README.md link {link} resolves in the source tree',
                      os.path.exists(os.path.join(src, link)))
            if not link.startswith('../') and not link.startswith('tools/'):
                res.check(f'README.md link {link} resolves in the installed share/doc/zmount',
                          os.path.exists(os.path.join(docdir, link)))
        for name in sorted(set(re.findall(r'\b(test_[a-z_]+\.py)\b', section('Memory')))):
            res.check(f'README.md "Memory" names {name}, which exists',
                      os.path.exists(os.path.join(src, 'tests', 'mount', name)))
        # "`test_x.py` cases a, b" / "sections a, b": each a case the test runs
        for name, parts in re.findall(r'`(test_[a-z_]+\.py)` (?:cases?|sections?) ([a-z, ]+)',
                                      section('Memory')):
            path = os.path.join(src, 'tests', 'mount', name)
            text = open(path).read() if os.path.exists(path) else ''
            for case in (c.strip() for c in parts.split(',')):
                res.check(f'README.md "Memory": {name} has a case {case!r}',
                          re.search(rf"'{case}'|\b{case}\b,|,{case}\b", text) is not None)

        # -- facts -------------------------------------------------------------------
        # A deflate block wider than cache_size/2 is streamed, not refused
        # (tests/mount/test_memory.py deflate reads one of 256 MiB).
        for where, text in (('README.md', readme), ('zmount.1', zman_all)):
            for p in (paragraphs(text) if where == 'README.md' else text.split('\n\n')):
                if 'deflate block' in p:
                    res.check(f'{where}: a wide deflate block is not said to fail with EIO',
                              'EIO' not in p, p[:160])
        # noindex stops both background passes, the gzip indexing and the
        # checkpoint pass over xz Blocks and zstd frames (fs/main.c starts the
        # indexer, which runs both, only without it): each text must say both.
        help_lines = helps.get('zmount', '').splitlines()
        at = [i for i, ln in enumerate(help_lines) if re.match(r'\s+-o noindex\b', ln)]
        noindex_help = ''
        for ln in help_lines[at[0]:] if at else []:
            if noindex_help and not re.match(r'\s{8,}\S', ln):
                break
            noindex_help += ' ' + ln.strip()
        noindex_readme = next((ln for ln in readme.splitlines()
                               if ln.startswith('| `noindex`')), '')
        noindex_man = next((p for p in zman.get('OPTIONS', []) if p.startswith('noindex ')), '')
        for where, text in (('zmount --help', noindex_help), ('README.md', noindex_readme),
                            ('zmount.1', noindex_man)):
            res.check(f'{where}: noindex is said to stop gzip indexing and checkpoint passes',
                      'gzip' in text and 'checkpoint' in text, repr(text[:300]))
        res.check('cache_size error does not promise up to 8.0 EiB',
                  'EiB' not in run([zmount, '/', '/nonexistent', '-o', 'cache_size=99999999T'])[2])

        # -- mounting with each documented FUSE option -------------------------------------
        why = zmtest.fuse_missing_reason()
        if why is not None:
            print(zmtest.SKIP_LINE + f' ({why}): not tried: {to_mount}', flush=True)
            failed = res.finish()
            sys.exit(failed if failed else zmtest.SKIP_RC)
        work = os.path.join(tmp, 'work')
        for name in to_mount:
            if name.startswith('-'):
                ok, detail = mounts_with(zmount, work, None, (name,))
            else:
                ok, detail = mounts_with(zmount, work, name)
            res.check(f'documented option {name} is accepted (mounted with it)', ok, detail)
        for name in refused:
            rc, out, err = run([zmount, os.path.join(work, 'src'), os.path.join(work, 'mnt'),
                                '-o', name])
            res.check(f'fstab option {name} is refused with "unknown option", as zmount.1 says',
                      rc == 1 and 'unknown option' in err, f'exit {rc}, {err.strip()[:100]}')
    sys.exit(res.finish())


if __name__ == '__main__':
    main()
