#!/usr/bin/env python3
"""No format is named outside the format table (issue 31, item 4).

fs/, source/ and tools/ know formats only through index/fmttab.h: a new
format is one file and one line of index/fmttab.c's table.  This scans
their C code (fs/*.[ch], source/*.[ch], tools/*.[ch]), comments blanked,
for what would tie them to one format:

  - a format's name or suffix as a word: xz, gzip, gz, zstd, zst, lzma,
    zlib, txz, tgz, tzst (in code and in string literals: a message that
    says "gzip" is wrong for every other format);
  - a codec's or a library's identifiers: xzdec*, gzdec*, zstddec*,
    lzma2dec*, xzckpt*, zstdckpt*, lzma_*, ZSTD_*, inflate*, deflate*,
    z_stream, a per-format id (FMT_XZ, IDXFILE_KIND_GZIP, fmt_zstd, ...),
    or a per-format record codec (idxrec_gz*, idxrec_zstd*).

Comments may name formats: they explain.  So may the help texts in
ALLOWED below, each found by the opening of its string literal and
covering that literal and the ones concatenated to it; nothing else.

usage: check_fmtnames.py SOURCE_DIR
Exit 0: none found; 1: each hit named as FILE:LINE, or an allow-list
entry that no longer matches anything (the help moved: update it), or
the sources were not found.
"""
import os
import re
import sys

DIRS = (('fs', ('.c', '.h')), ('source', ('.c', '.h')), ('tools', ('.c', '.h')))

# A name as a word: not inside a longer identifier ("gz" in "tgz" is tgz's).
NAMES = r'xz|gzip|gz|zstd|zst|lzma|zlib|txz|tgz|tzst'
IDENTS = (r'xzdec\w*|gzdec\w*|zstddec\w*|lzma2dec\w*|xzckpt\w*|zstdckpt\w*|lzma_\w*|ZSTD_\w*|'
          r'inflate\w*|deflate\w*|z_stream|FMT_(?:XZ|GZ|GZIP|ZSTD)\b|IDXFILE_KIND_(?:GZIP|ZSTD)|'
          r'fmt_(?:xz|gz|gzip|zstd)\b|idxrec_(?:gz|zstd)\w*')
HIT = re.compile(r'(?<![A-Za-z0-9])(?:(?:' + NAMES + r')(?![A-Za-z0-9])|' + IDENTS + r')',
                 re.I)

# (file, opening of a help text's first string literal): the --help of each
# program, which says what each format does differently (span defaults,
# suffixes, what a verify checks).  test_docs.py holds them to the README.
ALLOWED = (
    ('fs/main.c', 'usage: zmount SRC MNT'),
    ('tools/zmount-cat.c', 'usage: zmount-cat '),
    ('tools/zmount-index.c', 'usage: zmount-index build'),
    ('tools/zmount-info.c', 'usage: zmount-info '),
)

LITERAL = r'"(?:\\.|[^"\\\n])*"'
LITERALS = re.compile(LITERAL + r'(?:\s*' + LITERAL + r')*')


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def strip_comments(text):
    """Comments blanked, string and character literals kept, newlines kept."""
    def one(m):
        return blank(m) if m.group(0)[0] == '/' else m.group(0)
    return re.sub(r'/\*.*?\*/|//[^\n]*|' + LITERAL + r"|'(?:\\.|[^'\\\n])*'", one, text,
                  flags=re.S)


def strip_allowed(rel, text, used):
    """The help texts ALLOWED for file rel blanked; used gets each entry that matched."""
    opens = [(i, o) for i, (f, o) in enumerate(ALLOWED) if f == rel]

    def one(m):
        for i, o in opens:
            if m.group(0).startswith('"' + o):
                used.add(i)
                return blank(m)
        return m.group(0)
    return LITERALS.sub(one, text) if opens else text


def scan(src, rel, text, used):
    """Hits in one file's text, as 'FILE:LINE: name in: line'."""
    code = strip_allowed(rel, strip_comments(text), used)
    out = []
    for n, line in enumerate(code.split('\n'), 1):
        for m in HIT.finditer(line):
            out.append(f'{rel}:{n}: "{m.group(0)}" in: {line.strip()[:120]}')
            break
    return out


def self_test():
    """The scanner finds what it must, and leaves comments and longer words alone."""
    bad = 'int f(void)\n{\n\treturn lzma_code(s, LZMA_RUN) + ZSTD_isError(r);\n}\n'
    ok = '/* gzip, xz and zstd */\nstatic int tgzx, gzipped_count; // xz\nchar *s = "gz" "\\"";\n'
    msg = 'zlog(ZLOG_WARN, "not a gzip file");\n'
    assert len(scan('', 'x.c', bad, set())) == 1, 'lzma_code not found'
    assert scan('', 'x.c', ok.replace('"gz" ', ''), set()) == [], 'a comment or a word found'
    assert len(scan('', 'x.c', ok, set())) == 1, '"gz" in a literal not found'
    assert len(scan('', 'x.c', msg, set())) == 1, 'a message naming gzip not found'


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 1
    src = sys.argv[1]
    self_test()
    hits, used, files = [], set(), 0
    for d, exts in DIRS:
        top = os.path.join(src, d)
        if not os.path.isdir(top):
            print(f'check_fmtnames: {top}: not a directory', file=sys.stderr)
            return 1
        for name in sorted(os.listdir(top)):
            if not name.endswith(exts):
                continue
            rel = f'{d}/{name}'
            with open(os.path.join(top, name), encoding='utf-8', errors='replace') as f:
                hits += scan(src, rel, f.read(), used)
            files += 1
    stale = [f'{f}: allowed help "{o}..." not found' for i, (f, o) in enumerate(ALLOWED)
             if i not in used]
    for ln in hits + stale:
        print(ln)
    if hits:
        print(f'check_fmtnames: {len(hits)} lines of fs/, source/ or tools/ name a format; '
              'ask index/fmttab.h instead (fmttab_names(), fmttab_name(id), ...)')
    print(f'check_fmtnames: {files} files, {len(hits)} hits, {len(stale)} stale allow-list '
          'entries', file=sys.stderr)
    return 1 if hits or stale or files < 20 else 0


if __name__ == '__main__':
    sys.exit(main())
