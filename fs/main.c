/* SPDX-License-Identifier: MIT */
/*
 * zmount SRC MNT [-o opts]: mounts SRC (a directory, or s3://BUCKET[/PREFIX])
 * read-only at MNT with every .xz, .gz and .zst shown decompressed.  main
 * parses and checks everything it can before mounting, so a mistake costs
 * one line on stderr and exit status 1, then runs libfuse's multi-threaded
 * loop until unmount or SIGTERM/SIGINT.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arctab.h"
#include "bdi.h"
#include "nodes.h"
#include "ns.h"
#include "ns_tar.h"
#include "ns_open.h"
#include "ns_s3.h"
#include "loop.h"
#include "ops.h"
#include "idxopen.h"
#include "indexer.h"
#include "opts.h"
#include "pool.h"
#include "reader.h"
#include "srcloc.h"
#include "tree.h"
#include "zlog.h"
#include "zmctx.h"

struct cli {
	struct opts opts;
	const char *src;
	int nonopts;
	int bad; /* a one-line error was printed */
	int help;
	int version;
	struct idxstore *store; /* index_dir's, or NULL (memory only): open_index_store */
};

enum { KEY_HELP, KEY_VERSION };

static const struct fuse_opt cli_spec[] = {
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END,
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: zmount SRC MNT [-f] [-d] [-s] [-o OPT[,OPT...]]\n"
		"Mounts directory SRC, or the objects under s3://BUCKET[/PREFIX], read-only at\n"
		"MNT; every x.xz, x.gz and x.zst shows as x, x.txz, x.tgz and x.tzst as x.tar,\n"
		"decompressed on demand.\n\n"
		"zmount options:\n"
		"  -o cache_size=SIZE  decoded bytes kept in memory (default 256M; K/M/G/T)\n"
		"  -o span=SIZE        checkpoint spacing (default gzip 1M, xz/zstd 16M; 64K..64M)\n"
		"  -o timeout=SECS     entry and attribute cache time (default 1)\n"
		"  -o threads=N        decode workers for read-ahead (default: CPUs)\n"
		"  -o noindex          no background work after mount: no gzip indexing, no\n"
		"                      checkpoint pass over xz Blocks and zstd frames\n"
		"  -o salvage          show the verified start of damaged .gz/.xz files\n"
		"  -o tar              show x.tar.gz, x.tgz, x.tar.xz, x.txz, x.tar.zst, x.tzst\n"
		"                      and x.tar as directories x.tar/ of their members\n"
		"  -o index_dir=PATH   where gzip indexes and measured zstd frame sizes persist\n"
		"                      (default $XDG_CACHE_HOME/zmount or ~/.cache/zmount;\n"
		"                      none: memory only; s3://BUCKET/PREFIX: shared, see\n"
		"                      endpoint=); a missing PATH is created if its parent exists\n"
		"  -o log_level=LEVEL  error, warning, info (default) or debug\n"
		"  -o log_file=PATH    append log lines, time-stamped, to PATH (default:\n"
		"                      syslog once daemonized, stderr with -f)\n"
		"s3:// options (keys come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/\n"
		"AWS_SESSION_TOKEN, else ~/.aws/credentials; never from the command line):\n"
		"  -o endpoint=URL     the S3 endpoint (default $AWS_ENDPOINT_URL, else\n"
		"                      https://s3.REGION.amazonaws.com)\n"
		"  -o region=R         the signing region (default $AWS_REGION, else us-east-1)\n"
		"  -o credentials=FILE a credentials file in the ~/.aws/credentials format\n"
		"  -o profile=P        its section (default $AWS_PROFILE, else default)\n"
		"  -o retries=N        retries of a failed request, 0..20 (default 4)\n"
		"  -o request_timeout=SECS  the limit of one request, 1..600 (default 30)\n"
		"                      (timeout= is also how long a listing is kept, at least 1 s)\n"
		"FUSE options:\n"
		"  -f                  stay in the foreground, log to stderr\n"
		"  -d                  debug: foreground, and trace every request\n"
		"  -s                  single-threaded\n"
		"  -o allow_other      let other users read the mount\n"
		"  -o max_read=SIZE    largest read request the kernel sends (4096..2G)\n"
		"  -h, --help          this text\n"
		"  -V, --version       the version\n");
}

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct cli *c = data;
	char msg[256];
	int ret;

	(void)outargs;
	switch (key) {
	case KEY_HELP:
		c->help = 1;
		return 0;
	case KEY_VERSION:
		c->version = 1;
		return 0;
	case FUSE_OPT_KEY_NONOPT:
		if (++c->nonopts == 1) {
			c->src = arg;
			return 0;
		}
		if (c->nonopts == 2)
			return 1; /* the mount point, for fuse_parse_cmdline */
		if (!c->bad)
			fprintf(stderr,
				"zmount: unexpected argument '%s' (usage: zmount SRC MNT [-o OPTS])\n",
				arg);
		c->bad = 1;
		return 0;
	case FUSE_OPT_KEY_OPT:
		ret = opts_apply(&c->opts, arg, msg, sizeof(msg));
		if (ret < 0 && !c->bad) {
			fprintf(stderr, "zmount: %s\n", msg);
			c->bad = 1;
		}
		return ret == 0; /* not ours: keep it for FUSE */
	default:
		return 1;
	}
}

/* Archives are opened with fds; a tree of thousands wants the hard limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Fds 0-2 must be open, or an archive could be opened as "stderr". */
static void keep_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			exit(1);
}

/* Read-only for the kernel too, so writes fail with EROFS before reaching us. */
static int add_mount_opts(struct fuse_args *args, const char *src)
{
	char *o = NULL, *fsname = NULL;
	int ret = -1;

	if (asprintf(&fsname, "fsname=%s", src) < 0)
		return -1;
	if (fuse_opt_add_opt(&o, "ro,default_permissions,subtype=zmount") == 0 &&
	    fuse_opt_add_opt_escaped(&o, fsname) == 0 && fuse_opt_add_arg(args, "-o") == 0 &&
	    fuse_opt_add_arg(args, o) == 0)
		ret = 0;
	free(o);
	free(fsname);
	return ret;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * True if the directory dir is top or lies below it: walks up from dir by
 * "..", comparing device and inode, so that a path through a bind mount or
 * a symlink, which realpath would not match, is caught too.  Iterative, and
 * bounded: a canonical path has fewer than PATH_MAX / 2 components.
 */
static bool is_below(const char *dir, const struct stat *top)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool below = false;

	for (int depth = 0; fd >= 0 && depth < PATH_MAX; depth++) {
		struct stat st, up;
		int parent;

		if (fstat(fd, &st) < 0)
			break;
		if (same_file(&st, top)) {
			below = true;
			break;
		}
		parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &up) < 0 || same_file(&up, &st)) {
			if (parent >= 0)
				close(parent);
			break; /* the root: its ".." is itself */
		}
		close(fd);
		fd = parent;
	}
	if (fd >= 0)
		close(fd);
	return below;
}

static bool path_below(const char *path, const char *top)
{
	size_t n = strlen(top);

	if (strcmp(top, "/") == 0)
		return true;
	return strncmp(path, top, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/*
 * True if mountinfo lists a zmount, of any source, on mnt already: a second
 * one would stack on it, and the first would go on serving nobody.
 */
static bool mounted_already(const char *mnt)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int ret;

	if (!f)
		return false; /* no /proc: nothing to check against */
	ret = bdi_is_mounted(f, mnt, NULL);
	fclose(f);
	return ret == 1;
}

/*
 * The mount point rules, checked before mounting; prints the one line and
 * returns -1 if mnt (canonical, from fuse_parse_cmdline) breaks one:
 *  - a mount point that is not a directory would mount, then fail every stat;
 *  - a zmount (of any SRC) already on MNT: a second daemon would stack on it;
 *  - MNT inside SRC: the daemon's own walks of SRC would enter the mount
 *    and wait on themselves, hanging every worker;
 *  - MNT containing SRC: SRC would be shown inside its own view.
 * src_st is NULL for a source that is no local directory (s3://): only the
 * first two rules apply.  MNT == SRC is allowed: the daemon opens SRC before mounting over it, and
 * reads it through that descriptor, under the mount.
 */
static int check_mountpoint(const char *mnt, const char *src, const struct stat *src_st)
{
	struct stat st;

	if (stat(mnt, &st) < 0) {
		fprintf(stderr, "zmount: %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "zmount: %s: mount point is not a directory\n", mnt);
		return -1;
	}
	if (mounted_already(mnt)) {
		fprintf(stderr,
			"zmount: %s: a zmount is already mounted there; not mounting %s on it\n",
			mnt, src);
		return -1;
	}
	if (!src_st || same_file(&st, src_st))
		return 0; /* not local, or over SRC itself */
	if (path_below(mnt, src) || is_below(mnt, src_st)) {
		fprintf(stderr, "zmount: %s: mount point is inside SRC %s; choose one outside it\n",
			mnt, src);
		return -1;
	}
	if (path_below(src, mnt) || is_below(src, &st)) {
		fprintf(stderr, "zmount: %s: mount point contains SRC %s; choose one outside it\n",
			mnt, src);
		return -1;
	}
	return 0;
}

/*
 * An index_dir that is not a directory (a regular file, or a path through
 * one) can never hold an index: said once here, not once per archive at
 * each load, and indexes are kept in memory.  A missing one is fine: the
 * first save creates it.  Returns dir, or NULL for none.
 */
static const char *usable_index_dir(const char *dir)
{
	struct stat st;

	if (!dir[0])
		return NULL;
	if (strstr(dir, "://"))
		return dir;
	if (stat(dir, &st) == 0 ? S_ISDIR(st.st_mode) : errno != ENOTDIR)
		return dir;
	zlog(ZLOG_WARN, "index_dir %s is not a directory; indexes are kept in memory only", dir);
	return NULL;
}

/*
 * A given index_dir=PATH (not the default, none or s3://) that does not
 * exist is created here, mode 0700, if its parent exists; if the parent is
 * missing too, that is most likely a typo: one line, and no mount, where
 * the first save would have created the whole path.  Only the default
 * directory is created with its parents (at the first save).  A PATH that
 * is not a directory is usable_index_dir's case.  Returns 0 or -1 (said on
 * stderr).
 */
static int check_index_dir(const struct opts *o)
{
	char parent[sizeof(o->index_dir)];
	struct stat st;
	char *slash;

	if (!o->index_dir_given || !o->index_dir[0] || strstr(o->index_dir, "://"))
		return 0;
	if (stat(o->index_dir, &st) == 0 || errno != ENOENT)
		return 0;
	strcpy(parent, o->index_dir); /* absolute (opts.c) */
	for (size_t n = strlen(parent); n > 1 && parent[n - 1] == '/'; n--)
		parent[n - 1] = '\0';
	slash = strrchr(parent, '/');
	slash[slash == parent] = '\0'; /* "/x" -> "/" */
	if (stat(parent, &st) < 0) {
		fprintf(stderr,
			"zmount: index_dir=%s: %s: %s (create it, or give index_dir=none)\n",
			o->index_dir, parent, strerror(errno));
		return -1;
	}
	if (mkdir(o->index_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "zmount: index_dir=%s: %s\n", o->index_dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* The readers' options for this mount, with the hooks that call back into octx. */
static void mount_reader_opts(struct reader_opts *ro, const struct cli *cli, struct ops_ctx *octx)
{
	reader_opts_default(ro, (size_t)cli->opts.cache_size);
	ro->span = cli->opts.span;
	ro->ck_span = cli->opts.ck_span;
	/*
	 * noindex: no checkpoint work the user did not ask for, so the first
	 * open of a sizeless zstd frame stays one plain decode (checkpoints come
	 * from a far read's pass); by default the background pass would decode
	 * the frame again, so measuring builds them at once.
	 */
	ro->ck_at_open = cli->opts.background_index != 0;
	ro->index_dir = cli->store;
	/* The first user of a gzip file usually reads it from the start. */
	ro->warm_bytes = (size_t)cli->opts.cache_size / 2;
	ro->warn_wide = true;
	ro->salvage = cli->opts.salvage != 0;
	/* A streamed unit that fails late: drop the pages it already gave the kernel. */
	ro->tainted = ops_tainted;
	ro->tainted_ctx = octx;
	/* A handle outlives a rename of its archive, not a write (reader.c, same_bytes). */
	ro->still_named = ops_still_named;
	ro->still_named_ctx = octx;
}

/* The node table of octx->ns, bound to arcs, into octx; 0, or -errno (said on stderr). */
static int mount_nodes(struct ops_ctx *octx, const struct cli *cli, struct arctab *arcs)
{
	struct ns_entry root = { 0 };
	int ret;

	ns_bind(octx->ns, arcs);
	ret = ns_resolve(octx->ns, "/", &root);
	if (ret == 0)
		ret = nodes_new(arcs, octx->ns, &root, &octx->nodes);
	ns_entry_clear(&root);
	if (ret < 0)
		fprintf(stderr, "zmount: %s: %s\n", cli->src, strerror(-ret));
	return ret;
}

/* Runs the loop until unmount or a signal; returns the exit status. */
static int session_loop(struct fuse_session *se, struct ops_ctx *octx, int single)
{
	const struct loop_hooks hooks = { ops_note_read, ops_adopt_read, octx };
	int ret = single ? fuse_session_loop(se) : loop_run(se, &hooks);

	/*
	 * fuse_session_loop returns the signal that ended it, loop_run 0:
	 * SIGTERM/SIGINT/SIGHUP are a clean stop.  -ECONNABORTED means the
	 * connection was aborted from outside
	 * (/sys/fs/fuse/connections/N/abort): the kernel has already failed
	 * every request, so that is a stop too, not a fault of ours.
	 */
	if (ret == -ECONNABORTED)
		zlog(ZLOG_INFO, "the FUSE connection was aborted from outside; exiting");
	return ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP || ret == -ECONNABORTED
		       ? 0
		       : 1;
}

/*
 * Runs the mounted, daemonized session until it ends: starts the pool
 * (*pool, for the caller to free after the archive table), the
 * invalidation thread and the indexer, and stops the last two.  Returns
 * the exit status.
 */
static int serve(struct fuse_session *se, struct ops_ctx *octx, const struct cli *cli,
		 const char *mnt, int single, struct pool **pool)
{
	struct indexer *ix = NULL;
	int ret;

	/* Workers start after daemonizing: fork keeps only the calling thread. */
	if (pool_new(cli->opts.threads, 4096, pool) < 0)
		return 1;
	zmctx_set_pool(octx->zm, *pool);
	ns_live(octx->ns); /* from now on the source's errors go to the log */
	if (notify_start(&octx->notify, se) < 0)
		zlog(ZLOG_WARN, "cannot start the page-cache invalidation thread");
	/* Half the workers index; the rest stay free for read-ahead. */
	ret = cli->opts.background_index ? ns_index_start(octx->ns, octx->arcs, octx->zm, *pool,
							  (cli->opts.threads + 1) / 2, &ix)
					 : 0;
	if (ret < 0 && ret != -ENOTSUP) /* ENOTSUP: a namespace indexed at first lookup */
		zlog(ZLOG_WARN,
		     "cannot start the background indexer; archives are indexed on first use");
	zlog(ZLOG_INFO, "mounted %s on %s (cache_size=%llu)", cli->src, mnt,
	     (unsigned long long)cli->opts.cache_size);
	ret = session_loop(se, octx, single);
	notify_stop(&octx->notify);
	indexer_stop(ix);
	ops_cleanup(octx);
	return ret;
}

static int run(struct fuse_args *args, struct cli *cli, const char *mnt, int foreground, int single)
{
	char msg[1024];
	struct reader_opts ropts;
	struct pool *pool = NULL;
	struct zmctx *zm = NULL;
	struct arctab *arcs = NULL;
	struct ops_ctx octx;
	struct fuse_session *se;
	int ret = 1;

	ops_ctx_init(&octx);
	mount_reader_opts(&ropts, cli, &octx);
	octx.timeout = cli->opts.timeout;
	octx.max_read = cli->opts.max_read;
	/* Before mounting: a missing bucket or an unreachable endpoint is one line and exit 1. */
	if (ns_open_src(cli->src, &cli->opts, &octx.ns, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "zmount: %s\n", msg);
		return 1;
	}
	if (cli->opts.tar && ns_tar_wrap(octx.ns, &octx.ns) < 0) {
		fprintf(stderr, "zmount: out of memory\n");
		return 1;
	}
	/* One context per mount: its cache, pool, counters and parked decoders. */
	if (zmctx_new((size_t)cli->opts.cache_size, &zm) < 0 ||
	    arctab_new(zm, &ropts, octx.ns, &arcs) < 0) {
		fprintf(stderr, "zmount: out of memory\n");
		goto out_cache;
	}
	if (mount_nodes(&octx, cli, arcs) < 0)
		goto out_tree;
	octx.arcs = arcs;
	octx.zm = zm;
	se = fuse_session_new(args, &ops_table, sizeof(ops_table), &octx);
	if (!se)
		goto out_tree;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, mnt) != 0)
		goto out_signals;
	ret = bdi_set_read_ahead(mnt, cli->src, OPS_READ_AHEAD);
	if (ret < 0)
		zlog(ZLOG_DEBUG, "kernel read-ahead left at its default: %s", strerror(-ret));
	ret = 1;
	if (!foreground)
		zlog_to_syslog(); /* before daemonizing: it may warn on stderr */
	if (fuse_daemonize(foreground) == 0)
		ret = serve(se, &octx, cli, mnt, single, &pool);
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_tree:
	nodes_free(octx.nodes);
out_cache:
	if (cli->opts.tar)
		ns_tar_stop(octx.ns); /* its scan threads read through arcs */
	arctab_free(arcs);	      /* waits for the readers' queued jobs */
	pool_free(pool);
	zmctx_free(zm);
	ns_free(octx.ns); /* after the readers: still_named asks it */
	return ret;
}

/* The shared store's client lines: a 404 is the usual answer to a get, so debug level only. */
static void index_store_log(void *arg, const char *line)
{
	(void)arg;
	zlog(ZLOG_DEBUG, "index store: %s", line);
}

/*
 * The one store handle of index_dir (idxopen.h), which every reader is
 * given: NULL for none, or for a local path that is not a directory
 * (usable_index_dir).  An s3://BUCKET/PREFIX store is opened with the
 * mount's endpoint and credentials options, before mounting, so that a
 * missing bucket or bad keys are one line and exit 1; a local mount must
 * name the endpoint: it has no bucket URL to take a default from.
 * Returns 0 or -1 (said on stderr).
 */
static int open_index_store(const struct cli *cli, int is_s3, struct idxstore **out)
{
	const char *dir = usable_index_dir(cli->opts.index_dir);
	struct s3src_conf sc = { 0 };
	char msg[1024];

	*out = NULL;
	if (!dir)
		return 0;
	if (strstr(dir, "://") && !is_s3 && !cli->opts.endpoint[0]) {
		fprintf(stderr, "zmount: index_dir=%s needs -o endpoint=URL for a local SRC\n",
			cli->opts.index_dir);
		return -1;
	}
	ns_s3_conf(&sc, &cli->opts);
	sc.log = index_store_log;
	if (idxopen(dir, &sc, out, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "zmount: %s\n", msg);
		return -1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts copts = { 0 };
	struct cli cli = { 0 };
	char src[PATH_MAX], why[256];
	struct srcloc loc;
	struct stat st;
	int ret = 1, is_s3;

	keep_std_fds();
	/*
	 * Chunks are 64 KiB to a few MiB: give them their own mappings, so a
	 * freed chunk goes back to the system instead of into a per-thread
	 * arena, where it would count against nothing and push the process
	 * past cache_size.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	opts_default(&cli.opts);
	if (fuse_opt_parse(&args, &cli, cli_spec, cli_proc) != 0 || cli.bad)
		goto out;
	if (cli.help || cli.version) {
		if (cli.help)
			usage(stdout);
		else
			printf("zmount %s (libfuse %s)\n", ZMOUNT_VERSION, fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!cli.src || cli.nonopts < 2) {
		fprintf(stderr, "zmount: missing %s (usage: zmount SRC MNT [-o OPTS])\n",
			cli.src ? "MNT" : "SRC and MNT");
		goto out;
	}
	/* The same words as the tools' for the same bad SRC (srcloc.h). */
	if (srcloc_parse(cli.src, SRCLOC_TREE, &loc, why, sizeof(why)) < 0) {
		fprintf(stderr, "zmount: %s: %s\n", cli.src, why);
		goto out;
	}
	is_s3 = loc.s3;
	if (!is_s3 && (stat(cli.src, &st) < 0 || !realpath(cli.src, src))) {
		srcloc_why(-errno, why, sizeof(why));
		fprintf(stderr, "zmount: %s: %s\n", cli.src, why);
		goto out;
	}
	if (!is_s3)
		cli.src = src;
	if (fuse_parse_cmdline(&args, &copts) != 0)
		goto out;
	if (!copts.mountpoint) {
		fprintf(stderr, "zmount: missing MNT (usage: zmount SRC MNT [-o OPTS])\n");
		goto out;
	}
	if (check_mountpoint(copts.mountpoint, is_s3 ? cli.src : src, is_s3 ? NULL : &st) < 0)
		goto out;
	zlog_set_level(cli.opts.log_level);
	if (cli.opts.log_file[0] && (ret = zlog_to_file(cli.opts.log_file)) < 0) {
		fprintf(stderr, "zmount: log_file=%s: %s\n", cli.opts.log_file,
			ret == -EINVAL	? "not a regular file"
			: ret == -ELOOP ? "a symlink"
					: strerror(-ret));
		ret = 1;
		goto out;
	}
	ret = 1; /* zlog_to_file set it to 0 */
	if (check_index_dir(&cli.opts) < 0)
		goto out;
	if (add_mount_opts(&args, cli.src) != 0 || open_index_store(&cli, is_s3, &cli.store) < 0)
		goto out;
	raise_fd_limit();
	ret = run(&args, &cli, copts.mountpoint, copts.foreground, copts.singlethread);
out:
	idxstore_free(cli.store); /* after run: its readers are closed */
	free(copts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
