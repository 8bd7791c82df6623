"""zmtest -- shared plumbing for the zmount mount tests.

Standard library only (python3 >= 3.11).  What is here:

  require_fuse()      exit 77 with a loud SKIP line when /dev/fuse or fusermount3
                      is missing (ctest runs these with SKIP_RETURN_CODE 77).
  Results             the pass/fail counter: one "PASS: ..." / "FAIL: ..." line per
                      check, and finish() prints the final "N passed, M failed".
  Mount               context manager that follows the house order for mount tests:
                        1. start `zmount SRC MNT -f -o OPTS` in the background,
                           stdout+stderr to a log file;
                        2. wait (deadline 10 s) until MNT is mounted, failing fast
                           if the daemon died;
                        3. yield (the test compares bytes);
                        4. `fusermount3 -u MNT`;
                        5. wait (deadline 20 s) for the daemon, require exit 0;
                        6. on any exception: `fusermount3 -uz MNT` and kill the daemon.
                      A watchdog kills the daemon (by pid) if the whole block takes
                      too long, so that a hung FUSE request cannot hang the test:
                      killing the daemon aborts the connection and every blocked
                      syscall returns ENOTCONN.
  log helpers         Mount.log_text(), Mount.log_lines(), lines_naming().
  is_mounted()        from /proc/self/mountinfo, so it never blocks on the daemon;
                      mountinfo() gives every mount's fields, mount_alive() says
                      whether a mount still answers (not ENOTCONN).
  reading helpers     sha(), sha_path() (past the page cache), drop_cache(),
                      open_direct(), errname() (an exception as a check names it).
  run_check_mount()   runs the corpus's check-mount.py, one check per row it prints.
  proc_status()       the daemon's memory figures from /proc/PID/status; vm_hwm_kib().
  xz_vli()            an xz variable-length integer, for files written by hand.

The daemon is only ever signalled by its own pid (subprocess.Popen.kill/terminate).
"""
import collections
import errno
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import threading
import time

SKIP_RC = 77
SKIP_LINE = ('SKIP: FUSE is not available on this machine (/dev/fuse missing) '
             '-- mount tests NOT run')


def fuse_missing_reason():
    """None when FUSE mounts can be tried here, else why not."""
    if not os.path.exists('/dev/fuse'):
        return '/dev/fuse does not exist'
    if shutil.which('fusermount3') is None:
        return 'fusermount3 not found on PATH'
    return None


def require_fuse():
    """Exit 77 (ctest SKIP) with a loud line when FUSE is not usable."""
    why = fuse_missing_reason()
    if why is not None:
        print(SKIP_LINE, flush=True)
        print(f'SKIP: reason: {why}', flush=True)
        sys.exit(SKIP_RC)


def stats(mnt):
    """The daemon's user.zmount.stats on MNT as {name: int}; OSError if unreadable."""
    out = {}
    for ln in os.getxattr(mnt, 'user.zmount.stats').decode(errors='replace').splitlines():
        k, _, v = ln.partition('=')
        if v.strip().isdigit():
            out[k.strip()] = int(v)
    return out


def proc_status(pid):
    """The daemon's /proc/PID/status sizes as {name: bytes} (VmRSS, VmHWM, ...),
    and Threads; OSError if it is gone."""
    out = {}
    with open(f'/proc/{pid}/status') as f:
        for ln in f:
            k, _, v = ln.partition(':')
            if v.strip().endswith('kB'):
                out[k] = int(v.split()[0]) * 1024
            elif k == 'Threads':
                out[k] = int(v)
    return out


def xz_vli(n):
    """n as an xz variable-length integer (Index records, sizes)."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def binary_ok(res, path):
    """Records a failure and returns False unless PATH is an executable file."""
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return True
    res.fail('zmount binary exists and is executable', path)
    return False


class Results:
    """Counts checks; prints one line per check and the final summary line."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, name, ok, detail='', info=''):
        """Record one check.  DETAIL is printed when it fails, INFO when it passes."""
        if ok:
            self.passed += 1
            print(f'PASS: {name}' + (f' ({info})' if info else ''), flush=True)
        else:
            self.failed += 1
            self.failures.append(name)
            print(f'FAIL: {name}' + (f' -- {detail}' if detail else ''), flush=True)
        return bool(ok)

    def ok(self, name, info=''):
        return self.check(name, True, info=info)

    def fail(self, name, detail=''):
        return self.check(name, False, detail)

    @staticmethod
    def note(msg):
        print(f'NOTE: {msg}', flush=True)

    def finish(self):
        """Print the summary (always the last line) and return the exit code."""
        sys.stderr.flush()
        if self.failures:
            print('failed checks: ' + '; '.join(self.failures), flush=True)
        print(f'{self.passed} passed, {self.failed} failed', flush=True)
        return 0 if self.failed == 0 and self.passed > 0 else 1


def _unescape_mountinfo(s):
    # mountinfo escapes space, tab, newline and backslash as \ooo
    return re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), s)


MountEntry = collections.namedtuple('MountEntry', 'mnt dev opts fstype source sopts')


def mountinfo():
    """Every mount as a MountEntry, in /proc/self/mountinfo's order (oldest
    first): mount point, "major:minor", mount options, fstype, source, super
    options, unescaped.

    Unlike os.path.ismount() this never sends a request to a daemon, so it
    cannot hang on a stuck filesystem.  Raises OSError if the file cannot be read."""
    out = []
    with open('/proc/self/mountinfo', encoding='utf-8', errors='surrogateescape') as f:
        for line in f:
            pre, _, post = line.rstrip('\n').partition(' - ')
            fields = pre.split(' ')
            fstype, source, sopts = (post.split(' ') + ['', '', ''])[:3]
            if len(fields) > 5:
                out.append(MountEntry(_unescape_mountinfo(fields[4]), fields[2], fields[5], fstype,
                                      _unescape_mountinfo(source), sopts))
    return out


def is_mounted(mnt):
    """True if MNT is a mount point (mountinfo(), so it never blocks on the daemon)."""
    want = os.path.realpath(mnt)
    try:
        return any(e.mnt == want for e in mountinfo())
    except OSError:
        return os.path.ismount(mnt)


def mount_alive(mnt):
    """False once the mount at MNT answers ENOTCONN (its daemon is gone)."""
    try:
        os.stat(mnt)
        return True
    except OSError as e:
        return e.errno != errno.ENOTCONN


def fusermount(mnt, lazy=False, timeout=20):
    """Run fusermount3 -u (or -uz); return (returncode, stderr text)."""
    argv = ['fusermount3', '-uz' if lazy else '-u', mnt]
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f'{" ".join(argv)} timed out after {timeout} s'
    return p.returncode, (p.stdout + p.stderr).decode(errors='replace').strip()


def cleanup_top(top, keep):
    """Lazily unmounts every mnt* left mounted under TOP, then removes TOP
    (or says where it is kept)."""
    for d in os.listdir(top):
        if d.startswith('mnt') and is_mounted(os.path.join(top, d)):
            fusermount(os.path.join(top, d), lazy=True)
    if keep:
        print(f'# kept {top}')
    else:
        shutil.rmtree(top, ignore_errors=True)


def lines_naming(lines, names):
    """Lines that mention any of NAMES as a whole name.

    A name only counts when it is not glued to more name characters, so that
    'bad-1-lzma2-1' does not match inside 'bad-1-lzma2-10' ('.' may follow, so
    the stripped name matches inside 'x.xz')."""
    pats = [re.compile(r'(?<![\w-])' + re.escape(n) + r'(?![\w-])') for n in names]
    return [ln for ln in lines if any(p.search(ln) for p in pats)]


class MountError(Exception):
    pass


class Mount:
    """Context manager around one foreground zmount daemon.

    zmount, src, mnt: paths; opts: the -o string or None; log_path: where the
    daemon's stdout+stderr go; results: a Results to record the unmount/exit
    checks in (without one, a failure raises MountError); env: variables
    added to the daemon's environment (test hooks); watchdog: seconds
    after which the daemon is killed no matter what."""

    def __init__(self, zmount, src, mnt, opts=None, log_path=None, extra_args=(),
                 results=None, mount_timeout=10.0, exit_timeout=20.0, watchdog=None,
                 label='zmount', nofile=None, env=None):
        self.zmount = zmount
        self.env = env            # variables added to the daemon's environment, or None
        self.src = src
        self.mnt = mnt
        self.opts = opts
        self.log_path = log_path or os.path.join(os.path.dirname(os.path.abspath(mnt)),
                                                 'zmount-daemon.log')
        self.extra_args = list(extra_args)
        self.results = results
        self.mount_timeout = mount_timeout
        self.exit_timeout = exit_timeout
        self.watchdog_s = watchdog
        self.label = label
        self.nofile = nofile      # (soft, hard) RLIMIT_NOFILE for the daemon, or None
        self.proc = None
        self.returncode = None
        self.timed_out = False
        self._log = None
        self._timer = None

    # -- logs -------------------------------------------------------------
    def log_text(self):
        try:
            with open(self.log_path, 'rb') as f:
                return f.read().decode('utf-8', errors='replace')
        except OSError:
            return ''

    def log_lines(self):
        return [ln for ln in self.log_text().splitlines() if ln.strip()]

    def log_tail(self, n=40):
        lines = self.log_text().splitlines()
        if not lines:
            return '    (daemon log is empty)'
        return '\n'.join('    | ' + ln for ln in lines[-n:])

    @property
    def argv(self):
        argv = [self.zmount, self.src, self.mnt, '-f']
        if self.opts:
            argv += ['-o', self.opts]
        return argv + self.extra_args

    # -- lifecycle --------------------------------------------------------
    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        if is_mounted(self.mnt):
            raise MountError(f'{self.mnt} is already a mount point')
        self._log = open(self.log_path, 'wb')
        print(f'# starting: {" ".join(self.argv)}  (log: {self.log_path})', flush=True)
        pre = None
        if self.nofile is not None:
            lim = self.nofile
            pre = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, lim)  # noqa: E731
        env = dict(os.environ, **self.env) if self.env else None
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=self._log, start_new_session=True, preexec_fn=pre,
                                     env=env)
        if self.watchdog_s:
            self._timer = threading.Timer(self.watchdog_s, self._on_watchdog)
            self._timer.daemon = True
            self._timer.start()
        try:
            self._wait_mounted()
        except BaseException:
            self._emergency()
            raise
        return self

    def _wait_mounted(self):
        deadline = time.monotonic() + self.mount_timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.returncode = rc
                raise MountError(f'{self.label}: daemon exited with status {rc} before '
                                 f'{self.mnt} was mounted; log:\n{self.log_tail()}')
            if is_mounted(self.mnt):
                break
            if time.monotonic() > deadline:
                raise MountError(f'{self.label}: {self.mnt} not mounted after '
                                 f'{self.mount_timeout:g} s; log:\n{self.log_tail()}')
            time.sleep(0.05)
        # the first real request to the daemon; the watchdog covers a hang here
        if not os.path.ismount(self.mnt):
            raise MountError(f'{self.label}: {self.mnt} is in mountinfo but '
                             f'os.path.ismount() says no')

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def _on_watchdog(self):
        self.timed_out = True
        print(f'TIMEOUT: {self.label}: watchdog fired after {self.watchdog_s:g} s; '
              f'killing daemon pid {self.proc.pid} and lazy-unmounting {self.mnt}', flush=True)
        self._kill()
        fusermount(self.mnt, lazy=True)

    def _kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.terminate()
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def _stop_timer(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close_log(self):
        if self._log is not None:
            self._log.close()
            self._log = None

    def _emergency(self):
        """Failure path: lazy unmount, kill the daemon, never raise."""
        self._stop_timer()
        try:
            if is_mounted(self.mnt):
                fusermount(self.mnt, lazy=True)
            self._kill()
            if self.proc is not None:
                self.returncode = self.proc.returncode
        finally:
            self._close_log()

    def _record(self, name, ok, detail=''):
        if self.results is not None:
            self.results.check(name, ok, detail)
        elif not ok:
            raise MountError(f'{name}: {detail}')

    def unmount(self):
        """fusermount3 -u, then wait for the daemon and require exit 0.

        Returns True when both went right."""
        self._stop_timer()
        try:
            if self.timed_out:
                self._record(f'{self.label}: finished before the {self.watchdog_s:g} s watchdog',
                             False, f'the watchdog killed the daemon; log tail:\n{self.log_tail()}')
                return False
            rc, msg = fusermount(self.mnt)
            unmounted = rc == 0 and not is_mounted(self.mnt)
            self._record(f'{self.label}: fusermount3 -u succeeds', unmounted,
                         f'rc={rc} {msg}'.strip())
            if not unmounted:
                fusermount(self.mnt, lazy=True)
            try:
                self.returncode = self.proc.wait(timeout=self.exit_timeout)
                ok = self.returncode == 0 and not self.timed_out
                detail = (f'exit status {self.returncode}'
                          + (' after the watchdog killed it' if self.timed_out else ''))
                if not ok:
                    detail += '; log tail:\n' + self.log_tail()
                self._record(f'{self.label}: daemon exits 0 within {self.exit_timeout:g} s '
                             f'of unmount', ok, detail)
                return unmounted and ok
            except subprocess.TimeoutExpired:
                self._kill()
                self._record(f'{self.label}: daemon exits 0 within {self.exit_timeout:g} s '
                             f'of unmount', False,
                             f'still running after {self.exit_timeout:g} s; killed it; '
                             f'log tail:\n{self.log_tail()}')
                return False
        finally:
            self._close_log()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.unmount()
            except BaseException:
                self._emergency()
                raise
        else:
            print(f'# {self.label}: exception inside the mount block; lazy-unmounting '
                  f'{self.mnt} and killing daemon pid {self.proc.pid}', flush=True)
            self._emergency()
        return False


def errno_name(n):
    return errno.errorcode.get(n, str(n))


def errname(e):
    """An exception as a test line names it: the errno's name for an OSError."""
    return errno_name(e.errno) if isinstance(e, OSError) and e.errno else type(e).__name__


def drop_cache(fd):
    """Asks the kernel to drop fd's cached pages, so that reads reach the daemon."""
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass


def open_direct(path):
    """An O_DIRECT fd (reads reach the daemon at the caller's offsets), or None."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return None


def sha(data):
    return hashlib.sha256(data).hexdigest()


def sha_path(path, chunk=1 << 20):
    """(SHA-256 hex digest, size) of the file at PATH, read past the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        drop_cache(fd)
        h, off = hashlib.sha256(), 0
        while True:
            b = os.pread(fd, chunk, off)
            if not b:
                return h.hexdigest(), off
            h.update(b)
            off += len(b)
    finally:
        os.close(fd)


def vm_hwm_kib(pid):
    """The peak resident size of process PID in KiB, or None once it is gone."""
    try:
        return proc_status(pid)['VmHWM'] // 1024
    except (OSError, KeyError):
        return None


def run_check_mount(res, argv, timeout, label=''):
    """Runs the corpus's check-mount.py (ARGV) and records one check per PASS/FAIL row
    it prints, its exit status, and a failure if it printed no row.  LABEL prefixes
    every check's name."""
    print(f'# running: {" ".join(argv)}', flush=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        res.fail(f'{label}check-mount.py finishes', f'timed out after {timeout} s')
        return
    rows = 0
    for line in p.stdout.decode(errors='replace').splitlines():
        c = line.split('\t')
        if len(c) >= 3 and c[0] in ('PASS', 'FAIL'):
            rows += 1
            res.check(f'{label}check-mount.py {c[1]} ({c[2]})', c[0] == 'PASS',
                      c[3] if len(c) > 3 else '')
        elif line.strip():
            print(f'#   check-mount.py: {line}')
    summary = p.stderr.decode(errors='replace').strip()
    res.check(f'{label}check-mount.py exits 0', p.returncode == 0,
              f'rc={p.returncode}; {summary[-400:]}',
              info=f'{summary} in {time.monotonic() - t0:.1f} s')
    if rows == 0:
        res.fail(f'{label}check-mount.py printed result rows', 'none')
