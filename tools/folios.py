#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""folios.py FILE...: how the kernel holds FILE's page cache, folio by folio.

For each FILE: map it shared and read-only, find which of its pages are
resident (mincore; pages not in the page cache are never touched, so this
reads nothing from disk or from a FUSE daemon), touch the resident ones so
they are mapped, take their page frame numbers from /proc/self/pagemap and
their flags from /proc/kpageflags, and print a histogram of folio sizes
(a folio is a compound head page and the tail pages after it, or a single
page that is neither).  Needs root: without CAP_SYS_ADMIN pagemap hides PFNs.

Also prints the FileHugePages and FilePmdMapped lines of /proc/meminfo.
Stdlib only (ctypes for mmap/mincore, whose addresses Python's mmap hides).
"""

import ctypes
import ctypes.util
import os
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")
PROT_READ = 1
MAP_SHARED = 1
MAP_FAILED = ctypes.c_void_p(-1).value
# include/uapi/linux/kernel-page-flags.h
KPF_COMPOUND_HEAD = 15
KPF_COMPOUND_TAIL = 16
KPF_THP = 22
PM_PRESENT = 1 << 63
PFN_MASK = (1 << 55) - 1

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def page_flags(pfns):
    """Flags of each PFN in pfns (None stays None)."""
    out = []
    with open("/proc/kpageflags", "rb") as kf:
        for pfn in pfns:
            if pfn is None:
                out.append(None)
                continue
            kf.seek(pfn * 8)
            out.append(struct.unpack("<Q", kf.read(8))[0])
    return out


def scan(path):
    """Returns (npages, resident, histogram {folio pages: count}, thp pages)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        npages = (size + PAGE - 1) // PAGE
        if npages == 0:
            return 0, 0, {}, 0
        addr = libc.mmap(None, npages * PAGE, PROT_READ, MAP_SHARED, fd, 0)
        if addr in (None, MAP_FAILED):
            raise OSError(ctypes.get_errno(), "mmap " + path)
    finally:
        os.close(fd)
    try:
        vec = ctypes.create_string_buffer(npages)
        if libc.mincore(addr, npages * PAGE, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore " + path)
        resident = [vec.raw[i] & 1 for i in range(npages)]
        for i in range(npages):
            if resident[i]:
                ctypes.string_at(addr + i * PAGE, 1)  # map it; it is cached
        pfns = []
        with open("/proc/self/pagemap", "rb") as pm:
            pm.seek((addr // PAGE) * 8)
            raw = pm.read(npages * 8)
        for i in range(npages):
            e = struct.unpack_from("<Q", raw, i * 8)[0]
            pfn = e & PFN_MASK if (e & PM_PRESENT) and resident[i] else None
            if pfn == 0:
                sys.exit("folios.py: pagemap shows no PFNs (run as root)")
            pfns.append(pfn)
    finally:
        libc.munmap(addr, npages * PAGE)

    flags = page_flags(pfns)
    hist = {}
    thp = 0
    i = 0
    while i < npages:
        f = flags[i]
        if f is None:
            i += 1
            continue
        if f & (1 << KPF_THP):
            thp += 1
        n = 1
        if f & (1 << KPF_COMPOUND_HEAD):
            # The folio's tails follow in the file and in physical memory.
            while (i + n < npages and flags[i + n] is not None and
                   flags[i + n] & (1 << KPF_COMPOUND_TAIL) and
                   pfns[i + n] == pfns[i] + n):
                if flags[i + n] & (1 << KPF_THP):
                    thp += 1
                n += 1
        hist[n] = hist.get(n, 0) + 1
        i += n
    return npages, sum(resident), hist, thp


def meminfo():
    keep = ("FileHugePages", "FilePmdMapped")
    with open("/proc/meminfo") as f:
        return " ".join(" ".join(l.split()[:2]) for l in f if l.startswith(keep))


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    print(meminfo())
    for path in argv[1:]:
        npages, res, hist, thp = scan(path)
        print(f"{path}: {npages} pages, {res} resident, {sum(hist.values())} folios, "
              f"{thp} pages flagged THP")
        for n in sorted(hist):
            order = n.bit_length() - 1
            tag = f"order {order}" if n == 1 << order else "partial"
            print(f"  {n * PAGE // 1024:>6} KiB ({tag:>8}): {hist[n]:>7} folios, "
                  f"{100.0 * n * hist[n] / max(res, 1):5.1f}% of resident pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
