#!/usr/bin/env python3
"""fs/locking.h names every lock and condition variable in the code.

Finds every pthread_mutex_t, pthread_rwlock_t, pthread_spinlock_t and
pthread_cond_t declared (not pointed to) in the production code (the .c and
.h files under fs/, index/, codec/, source/ and tools/), and names each one
by its owner and its name:

  OWNER.NAME   OWNER is the struct it is a field of (`struct reader` ->
               reader.stream; a typedef'd anonymous struct goes by its
               typedef name), or, for a variable outside any struct, the
               stem of the file that holds it (index/zlog.c's
               `static pthread_mutex_t rotate_lock` -> zlog.rotate_lock).

Every OWNER.NAME must appear in fs/locking.h as a whole word, and every
entry of locking.h's order list (a line " *  OWNER.NAME  ...") must still
name a lock that exists.  Matching goes by struct and field, not by file,
so code moved between files keeps passing; a renamed struct or field, a new
lock, or a removed one fails, naming each.

usage: check_locking.py SOURCE_DIR
Exit 0: all listed; 1: a lock is missing from fs/locking.h, an entry is
stale, or the sources were not found.
"""
import os
import re
import sys

DIRS = ('fs', 'index', 'codec', 'source', 'tools')
LOCKING = os.path.join('fs', 'locking.h')
TYPES = ('pthread_mutex_t', 'pthread_rwlock_t', 'pthread_spinlock_t', 'pthread_cond_t')
TOKEN = re.compile(r'[A-Za-z_]\w*|\d\w*|\S')


def strip(text):
    """The text with comments, string and character literals and preprocessor
    lines blanked; newlines are kept, so offsets still give line numbers."""
    out = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                 lambda m: re.sub(r'[^\n]', ' ', m.group(0)), text, flags=re.S)
    # preprocessor lines, continuations included
    return re.sub(r'^[ \t]*#(?:[^\n]*\\\n)*[^\n]*',
                  lambda m: re.sub(r'[^\n]', ' ', m.group(0)), out, flags=re.M)


def locks_in(path, text):
    """[(owner, name, type, line)] of the locks declared in one file."""
    stem = os.path.splitext(os.path.basename(path))[0]
    code = strip(text)
    toks = [(m.group(0), m.start()) for m in TOKEN.finditer(code)]
    found = []
    # One frame per open brace: ('struct', NAME) for a struct or union body
    # (NAME None until a typedef names it at the close), ('anon', None) for
    # an anonymous struct or union inside one (its fields are the outer
    # struct's), or ('block', None).
    stack = []
    parens = 0  # a type inside parentheses is a cast or a parameter
    pending = []  # [index in found] of the locks of an anonymous typedef'd struct

    def owner():
        for kind, name in reversed(stack):
            if kind == 'struct':
                return name
            if kind == 'block':
                break
        return stem

    i = 0
    while i < len(toks):
        t, pos = toks[i]
        if t == '{':
            prev = [x for x, _ in toks[max(0, i - 3):i]]
            if len(prev) >= 2 and prev[-2] in ('struct', 'union') and re.match(r'\w+$', prev[-1]):
                stack.append(('struct', prev[-1]))
            elif prev and prev[-1] in ('struct', 'union'):
                # anonymous: nested in a struct it belongs to that struct;
                # otherwise it takes the typedef name found at its close
                inside = stack and stack[-1][0] in ('struct', 'anon')
                stack.append(('anon', None) if inside else ('struct', None))
            else:
                stack.append(('block', None))
        elif t == '}':
            frame = stack.pop() if stack else ('block', None)
            if frame == ('struct', None):
                # typedef struct { ... } NAME;
                j = i + 1
                while j < len(toks) and toks[j][0] == '*':
                    j += 1
                name = toks[j][0] if j < len(toks) and re.match(r'[A-Za-z_]\w*$', toks[j][0]) \
                    else stem
                for k in pending:
                    found[k] = (name,) + found[k][1:]
                pending = []
        elif t == '(':
            parens += 1
        elif t == ')':
            parens = max(0, parens - 1)
        elif t in TYPES and parens == 0:
            # declarators up to ';': NAME, NAME[N], NAME = INIT; not *NAME
            # (a pointer to someone else's lock) nor a cast or a parameter
            j = i + 1
            while j < len(toks) and toks[j][0] not in (';', ')', '('):
                name = toks[j][0]
                if name == '*':
                    # skip this declarator
                    while j < len(toks) and toks[j][0] not in (',', ';', ')'):
                        j += 1
                    if j < len(toks) and toks[j][0] == ',':
                        j += 1
                    continue
                if re.match(r'[A-Za-z_]\w*$', name) and name not in TYPES:
                    line = code.count('\n', 0, toks[j][1]) + 1
                    own = owner()
                    if own is None:
                        pending.append(len(found))
                    found.append((own, name, t, line))
                # to the next declarator
                depth = 0
                while j < len(toks):
                    x = toks[j][0]
                    if x in ('(', '[', '{'):
                        depth += 1
                    elif x in (')', ']', '}'):
                        if depth == 0:
                            break
                        depth -= 1
                    elif depth == 0 and x in (',', ';'):
                        break
                    j += 1
                if j < len(toks) and toks[j][0] == ',':
                    j += 1
                else:
                    break
            i = j
            continue
        i += 1
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().split('\n\n')[-2], file=sys.stderr)
        sys.exit(1)
    src = sys.argv[1]
    locking_path = os.path.join(src, LOCKING)
    files = []
    for d in DIRS:
        for root, _, names in os.walk(os.path.join(src, d)):
            files += [os.path.join(root, n) for n in names if n.endswith(('.c', '.h'))]
    files = sorted(f for f in files if os.path.relpath(f, src) != LOCKING)
    if len(files) < 50 or not os.path.exists(locking_path):
        print(f'check_locking: found only {len(files)} C files under {src}, '
              f'or no {LOCKING}', file=sys.stderr)
        sys.exit(1)

    locks = {}
    for path in files:
        rel = os.path.relpath(path, src)
        for own, name, typ, line in locks_in(rel, open(path, errors='replace').read()):
            locks.setdefault(f'{own}.{name}', []).append((typ, f'{rel}:{line}'))

    doc = open(locking_path).read()
    missing = [k for k in sorted(locks) if not re.search(r'(?<![\w.])%s(?!\w)' % re.escape(k), doc)]
    # the order list's entries: " *  OWNER.NAME   FILE ..."
    entries = re.findall(r'^ \*  ([A-Za-z_]\w*\.[A-Za-z_]\w*) ', doc, re.M)
    stale = [e for e in entries if e not in locks]

    for k in missing:
        typ, where = locks[k][0]
        what = 'condition variable' if typ == 'pthread_cond_t' else 'lock'
        print(f'check_locking: {k} ({typ}, {where}) is not in {LOCKING}: name the {what} '
              'there, with what it protects and where it nests')
    for e in stale:
        print(f'check_locking: {LOCKING} lists {e}, which no longer exists in the code '
              '(renamed or removed?)')
    if missing or stale:
        print(f'check_locking: {len(missing)} of {len(locks)} locks and condition variables '
              f'missing from {LOCKING}, {len(stale)} stale entries')
        sys.exit(1)
    n_mutex = sum(1 for v in locks.values() if v[0][0] != 'pthread_cond_t')
    print(f'check_locking: all {n_mutex} locks and {len(locks) - n_mutex} condition variables '
          f'in {len(files)} files are in {LOCKING}')


if __name__ == '__main__':
    main()
