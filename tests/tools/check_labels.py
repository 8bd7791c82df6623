#!/usr/bin/env python3
"""Every registered test carries at least one of the labels the README's
"Development" section selects by: unit, tools, mount, s3, slow.

Reads `ctest --show-only=json-v1` of the build directory (nothing runs),
so a test added without a label fails here, by name, instead of silently
dropping out of `ctest -L unit` and the other selections.  Other labels
(stress, big, fuzz) may be added beside them.

usage: check_labels.py CTEST BUILD_DIR
Exit 0: every test has one; 1: some test has none, or ctest failed.
"""
import json
import subprocess
import sys

KNOWN = ('unit', 'tools', 'mount', 's3', 'slow')


def main():
    if len(sys.argv) != 3:
        print('usage: check_labels.py CTEST BUILD_DIR', file=sys.stderr)
        sys.exit(1)
    ctest, build = sys.argv[1:]
    p = subprocess.run([ctest, '--show-only=json-v1'], cwd=build, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        print(f'check_labels: ctest --show-only=json-v1 failed in {build}: {p.stderr.strip()}')
        sys.exit(1)
    tests = json.loads(p.stdout).get('tests', [])
    bad = []
    for t in tests:
        labels = []
        for prop in t.get('properties', []):
            if prop.get('name') == 'LABELS':
                labels += prop.get('value', [])
        if not set(labels) & set(KNOWN):
            bad.append((t['name'], labels))
    for name, labels in bad:
        have = f'only {";".join(labels)}' if labels else 'no label'
        print(f'check_labels: test {name} has {have}: give it one of {", ".join(KNOWN)} '
              '(LABELS in its set_tests_properties)')
    if bad or not tests:
        print(f'check_labels: {len(bad)} of {len(tests)} tests without one of {", ".join(KNOWN)}')
        sys.exit(1)
    print(f'check_labels: all {len(tests)} tests have one of {", ".join(KNOWN)}')


if __name__ == '__main__':
    main()
