/* SPDX-License-Identifier: MIT */
/*
 * memtrack's command line: parse, then hand over to mt_run() (record),
 * mt_dump() or the plugin listing.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"
#include "bpf-check.h"
#include "host.h"
#include "log.h"
#include "parse-size.h"
#include "plugin.h"
#include "report.h"
#include "run.h"
#include "attach.h"

#define EXIT_USAGE 2

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: memtrack [OPTIONS] -- CMD [ARGS...]   record CMD and every process it starts\n"
		"       memtrack [OPTIONS] --pid PID...      record running processes from now on\n"
		"       memtrack [OPTIONS] --source replay:FILE re-encode a recording\n"
		"       memtrack dump FILE                   print events as JSON lines\n"
		"       memtrack report FILE [--format text|json|collapsed|svg|html|pprof]\n"
		"                       [--pid PID] [--weight bytes|count] [--at end|peak]\n"
		"                                            summarise a recording\n"
		"       memtrack report --diff A B [--format text|json]\n"
		"                                            compare two recordings per site\n"
		"       memtrack plugins                     list plugins\n"
		"       memtrack COMMAND --help              a subcommand's options\n"
		"\n"
		"Options:\n"
		"  --source NAME[:ARGS]   event source (default: auto as root with BPF, else\n"
		"                         preload; ebpf for --pid and, as root, --stacks)\n"
		"  --encoder NAME[:ARGS]  encoder (default: msgpack-zstd; e.g. msgpack-zstd:level=3)\n"
		"  --sink NAME[:ARGS]     where frames go (default: file:<pid>.MemtrackArtifact.msgpack)\n"
		"  --workers N            encoder threads (default: online CPUs, at most 8)\n"
		"  --batch N              events per full frame (default: 65536)\n"
		"  --chunk N              events per source read (default: 1024)\n"
		"  --control PATH         unix socket taking enable, disable, drain, stop, ping\n"
		"  --start-disabled       record nothing until 'enable'\n"
		"  --ring-size BYTES      the source's ring buffer (power of two;\n"
		"                         ebpf: 16M, preload: 4M)\n"
		"  --high-watermark X     pause producers above this fill (fraction, N%% or bytes; 3/4)\n"
		"  --low-watermark X      resume them below this fill (1/4)\n"
		"  --throttle-us N        sleep N us after each chunk (testing: a slow consumer)\n"
		"  --stacks               record each allocation's call stack (ebpf: frame pointers;\n"
		"                         preload: DWARF, whole without them)\n"
		"  --stack-depth N        frames per stack, at most 127 (64)\n"
		"  --sample-bytes SIZE    record a sample of the allocations, one per SIZE bytes\n"
		"                         on average (512K, 2M; not ebpf): the report estimates\n"
		"  --seed N               the sampling's random seed (reproducible runs)\n"
		"  --stats[=FILE]         print a summary at exit; FILE gets JSON lines as it runs\n"
		"  --pid PID              attach to a running process (ebpf; repeatable) and the\n"
		"                         children it starts; the process runs on when memtrack ends\n"
		"  --duration SECONDS     with --pid: stop recording after this long\n"
		"  -v, --verbose          more messages (repeat for debug)\n"
		"  -q, --quiet            errors only\n"
		"  -h, --help             this text\n"
		"  -V, --version          print the version\n"
		"\n"
		"Exit status: the command's (128+N when signal N killed it), 1 when memtrack\n"
		"failed, 2 for a usage error. With --pid: 0, also when Ctrl-C ends it. Plugins are searched in $MEMTRACK_PLUGIN_PATH,\n"
		"then %s.\n"
		"report: a damaged file (cut short, corrupt) gives the report of the events\n"
		"before the damage, a warning on stderr and exit 0; exit 1 when no event\n"
		"could be read.\n",
		MT_PLUGINDIR);
}

/*
 * The subcommands' help. Each "  -" line is an option, and
 * tests/test-manpages.sh checks that the man page documents exactly those
 * (man/memtrack-*.1): change both together.
 */
static void usage_report(FILE *out)
{
	fputs("Usage: memtrack report [OPTIONS] FILE\n"
	      "       memtrack report --diff [--format text|json|html] A B\n"
	      "Summarise a recording ('-' for stdin): per process peak, leaks,\n"
	      "temporaries, top sites; collapsed stacks, an SVG or HTML chart,\n"
	      "a pprof profile.\n"
	      "\n"
	      "Options:\n"
	      "  --format FORMAT        text (default), json, collapsed, svg, html\n"
	      "                         or pprof (gzipped profile.proto)\n"
	      "  --pid PID              only process PID\n"
	      "  --weight WEIGHT        rank sites by bytes (default) or count\n"
	      "  --at WHEN              pprof's in-use heap: end (default) or peak\n"
	      "  --stack-lines N        callers shown per site in the text report and\n"
	      "                         the text --diff (0: all; default: enough to tell\n"
	      "                         the sites apart, 3 at least, as the html shows)\n"
	      "  --diff                 what grew and shrank per site from A to B\n"
	      "  -h, --help             this text\n"
	      "\n"
	      "A damaged file gives the report of the events before the damage,\n"
	      "a warning and exit 0; exit 1 when no event could be read; 2 for a\n"
	      "usage error.\n",
	      out);
}

static void usage_dump(FILE *out)
{
	fputs("Usage: memtrack dump [--] FILE\n"
	      "Print the events of a recording ('-' for stdin) as JSON lines.\n"
	      "Exit status: 1 when the file cannot be read whole (the events\n"
	      "before the damage are printed), 2 for a usage error.\n"
	      "\n"
	      "Options:\n"
	      "  -h, --help             this text\n",
	      out);
}

static void usage_plugins(FILE *out)
{
	fprintf(out,
		"Usage: memtrack plugins\n"
		"List the plugins memtrack finds, and why a file is not one.\n"
		"Searched: $MEMTRACK_PLUGIN_PATH, then %s.\n"
		"\n"
		"Options:\n"
		"  -h, --help             this text\n",
		MT_PLUGINDIR);
}

static bool is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static int usage_error(const char *fmt, ...) MT_PRINTF(1, 2);

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("memtrack: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see memtrack --help)\n", stderr);
	return EXIT_USAGE;
}

static int parse_count(const char *opt, const char *arg, unsigned long max,
		       unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || *out == 0 || *out > max ||
	    arg[0] == '-') {
		fprintf(stderr,
			"memtrack: %s '%s': want a whole number from 1 to %lu (see memtrack --help)\n",
			opt, arg, max);
		return -1;
	}
	return 0;
}

/* --sample-bytes SIZE (1 to 1T) and --seed N (0 to 2^64 - 1): checked
 * here, once, though auto hands them to both its halves */
static int check_sampling(const char *opt, const char *arg)
{
	uint64_t v;

	if (!strcmp(opt, "--sample-bytes")) {
		if (mt_parse_sample_bytes(arg, &v)) {
			fprintf(stderr,
				"memtrack: --sample-bytes '%s': want a size from 1 to 1T (512K, 2M; see memtrack --help)\n",
				arg);
			return -1;
		}
		return 0;
	}
	if (mt_parse_seed(arg, &v)) {
		fprintf(stderr,
			"memtrack: --seed '%s': want a number from 0 to 2^64 - 1 (see memtrack --help)\n",
			arg);
		return -1;
	}
	return 0;
}

static void print_plugin(const char *path, const struct mt_plugin *p,
			 const char *why, void *ctx)
{
	int *bad = ctx;

	if (!p) {
		printf("%-8s %-14s %-5s %s\n    %s\n", "invalid", "-", "-",
		       path, why ? why : "not a plugin");
		(*bad)++;
		return;
	}
	printf("%-8s %-14s %u.%-3u %s\n    %s (version %s)\n",
	       mt_plugin_kind_name(p->desc->kind), p->desc->name,
	       p->desc->abi_major, p->desc->abi_minor, path,
	       p->desc->description, p->desc->version);
}

static int cmd_plugins(int argc, char **argv)
{
	int bad = 0;

	if (argc == 2 && is_help(argv[1])) {
		usage_plugins(stdout);
		return 0;
	}
	if (argc > 1) {
		return usage_error("plugins takes no argument, got '%s'",
				   argv[1]);
	}
	printf("%-8s %-14s %-5s %s\n", "KIND", "NAME", "ABI", "PATH");
	mt_plugin_foreach(print_plugin, &bad);
	if (bad) {
		/* a broken install is a failure, for scripts too */
		fflush(stdout);
		mt_err("%d file%s in the plugin path %s not a valid plugin (see above)",
		       bad, bad == 1 ? "" : "s", bad == 1 ? "is" : "are");
		return 1;
	}
	return 0;
}

static int cmd_dump(int argc, char **argv)
{
	int i = 1;

	if (argc == 2 && is_help(argv[1])) {
		usage_dump(stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--")) {
		i++;
	} else if (argc > 1 && argv[1][0] == '-' && argv[1][1]) {
		return usage_error("dump: unknown option '%s'", argv[1]);
	}
	if (argc - i != 1) {
		return usage_error("dump takes one FILE ('-' for stdin)");
	}
	return mt_dump(argv[i]) < 0 ? 1 : 0;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "pid", required_argument, NULL, 'p' },
		{ "weight", required_argument, NULL, 'w' },
		{ "diff", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "at", required_argument, NULL, 'a' },
		{ "stack-lines", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct mt_report_opts o = { .format = MT_REPORT_TEXT,
				    .stack_lines = -1 };
	int c, diff = 0, nfiles;
	char *end;
	long pid;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage_report(stdout);
			return 0;
		case 'f':
			if (mt_report_parse_format(optarg, &o.format) < 0) {
				return usage_error("report --format '%s': want text, json, collapsed, svg, html or pprof",
						   optarg);
			}
			break;
		case 'w':
			if (mt_report_parse_weight(optarg, &o.weight) < 0) {
				return usage_error("report --weight '%s': want bytes or count",
						   optarg);
			}
			break;
		case 'a':
			if (strcmp(optarg, "end") && strcmp(optarg, "peak")) {
				return usage_error("report --at '%s': want end or peak",
						   optarg);
			}
			o.at_peak = strcmp(optarg, "peak") == 0;
			break;
		case 'p':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pid < 0 ||
			    pid > INT32_MAX) {
				return usage_error("report --pid '%s': want a process id",
						   optarg);
			}
			o.has_pid = true;
			o.pid = (int32_t)pid;
			break;
		case 's':
			errno = 0;
			pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pid < 0 ||
			    pid > 4096) {
				return usage_error("report --stack-lines '%s': want a number of frames (0: the whole stack)",
						   optarg);
			}
			o.stack_lines = (int)pid;
			break;
		case 'd':
			diff = 1;
			break;
		case ':':
			return usage_error("report: option '%s' needs a value",
					   argv[optind - 1]);
		default:
			return usage_error("report: unknown option '%s'",
					   argv[optind - 1]);
		}
	}
	nfiles = argc - optind;
	if (diff) {
		if (nfiles != 2) {
			return usage_error("report --diff takes two files, A and B");
		}
		if (o.format != MT_REPORT_TEXT && o.format != MT_REPORT_JSON &&
		    o.format != MT_REPORT_HTML) {
			return usage_error("report --diff prints text, json or html");
		}
		o.path = argv[optind];
		o.diff_b = argv[optind + 1];
	} else {
		if (nfiles != 1) {
			return usage_error("report takes one FILE ('-' for stdin)");
		}
		o.path = argv[optind];
	}
	return mt_report_run(&o) < 0 ? 1 : 0;
}

/* --ring-size and the like: kept for the source, whose args they become
 * once it is loaded (source-args.c); the last one given wins. */
static int set_source_opt(struct mt_run_opts *o, enum mt_source_opt opt,
			  const char *value)
{
	if (value && !mt_source_opt_valid(value)) {
		return usage_error("%s '%s': want one value, not empty and without ','",
				   mt_source_opt_name(opt), value);
	}
	o->source_opts[opt] = value ? value : "";
	return 0;
}

enum {
	OPT_SOURCE = 256,
	OPT_ENCODER,
	OPT_SINK,
	OPT_WORKERS,
	OPT_BATCH,
	OPT_CHUNK,
	OPT_CONTROL,
	OPT_START_DISABLED,
	OPT_RING_SIZE,
	OPT_HIGH_WATERMARK,
	OPT_LOW_WATERMARK,
	OPT_THROTTLE_US,
	OPT_STATS,
	OPT_STACKS,
	OPT_STACK_DEPTH,
	OPT_SAMPLE_BYTES,
	OPT_SEED,
	OPT_PID,
	OPT_DURATION,
};

static const struct option long_opts[] = {
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "encoder", required_argument, NULL, OPT_ENCODER },
	{ "sink", required_argument, NULL, OPT_SINK },
	{ "workers", required_argument, NULL, OPT_WORKERS },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "chunk", required_argument, NULL, OPT_CHUNK },
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "start-disabled", no_argument, NULL, OPT_START_DISABLED },
	{ "ring-size", required_argument, NULL, OPT_RING_SIZE },
	{ "high-watermark", required_argument, NULL, OPT_HIGH_WATERMARK },
	{ "low-watermark", required_argument, NULL, OPT_LOW_WATERMARK },
	{ "throttle-us", required_argument, NULL, OPT_THROTTLE_US },
	{ "stats", optional_argument, NULL, OPT_STATS },
	{ "stacks", no_argument, NULL, OPT_STACKS },
	{ "stack-depth", required_argument, NULL, OPT_STACK_DEPTH },
	{ "sample-bytes", required_argument, NULL, OPT_SAMPLE_BYTES },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "verbose", no_argument, NULL, 'v' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/*
 * Without --source: auto where BPF can trace (root, or CAP_BPF and
 * CAP_PERFMON, and a kernel with BTF and uprobes), which records each
 * process with the interposer where it reaches its allocator and with
 * uprobes where it does not; else preload, which says what it cannot
 * reach. --pid is the eBPF source's.
 */
static const char *default_source(const struct mt_run_opts *o)
{
	char why[256];
	int bpf;

	if (o->npids) {
		return "ebpf";
	}
	bpf = mt_bpf_check_system(MT_BPF_NEEDS_UPROBES, why, sizeof(why)) == 0;
	if (!bpf) {
		mt_info("source preload: eBPF cannot trace here (%s)", why);
		return "preload";
	}
	return "auto";
}

int main(int argc, char **argv)
{
	struct mt_run_opts o = {
		.source = NULL,
		.encoder = MT_DEFAULT_ENCODER,
		.batch = 65536,
		.chunk = 1024,
	};
	static int pids[MT_ATTACH_MAX];
	bool source_named = false;
	unsigned long v;
	int c;

	if (argc > 1 && strcmp(argv[1], "dump") == 0) {
		return cmd_dump(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "report") == 0) {
		return cmd_report(argc - 1, argv + 1);
	}
	if (argc > 1 && strcmp(argv[1], "plugins") == 0) {
		return cmd_plugins(argc - 1, argv + 1);
	}

	opterr = 0;
	/* '+': the first operand ends our options; the rest is the command.
	 * ':': a missing value is told apart from an unknown option. */
	while ((c = getopt_long(argc, argv, "+:vqhV", long_opts, NULL)) !=
	       -1) {
		switch (c) {
		case OPT_SOURCE:
			o.source = optarg;
			source_named = true;
			break;
		case OPT_ENCODER:
			o.encoder = optarg;
			break;
		case OPT_SINK:
			o.sink = optarg;
			break;
		case OPT_WORKERS:
			if (parse_count("--workers", optarg, 256, &v) < 0) {
				return EXIT_USAGE;
			}
			o.workers = (unsigned int)v;
			break;
		case OPT_BATCH:
			if (parse_count("--batch", optarg, 1UL << 24, &v) < 0) {
				return EXIT_USAGE;
			}
			o.batch = v;
			break;
		case OPT_CHUNK:
			if (parse_count("--chunk", optarg, 1UL << 20, &v) < 0) {
				return EXIT_USAGE;
			}
			o.chunk = v;
			break;
		case OPT_CONTROL:
			o.control_path = optarg;
			break;
		case OPT_START_DISABLED:
			o.start_disabled = 1;
			break;
		case OPT_RING_SIZE:
			if (set_source_opt(&o, MT_SOPT_RING_SIZE, optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_HIGH_WATERMARK:
			if (set_source_opt(&o, MT_SOPT_HIGH_WATERMARK,
					   optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_LOW_WATERMARK:
			if (set_source_opt(&o, MT_SOPT_LOW_WATERMARK, optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_STACKS:
			if (set_source_opt(&o, MT_SOPT_STACKS, NULL)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_SAMPLE_BYTES:
			if (check_sampling("--sample-bytes", optarg) < 0 ||
			    set_source_opt(&o, MT_SOPT_SAMPLE_BYTES, optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_SEED:
			if (check_sampling("--seed", optarg) < 0 ||
			    set_source_opt(&o, MT_SOPT_SEED, optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_STACK_DEPTH:
			if (parse_count("--stack-depth", optarg,
					MT_STACK_DEPTH_MAX, &v) < 0 ||
			    set_source_opt(&o, MT_SOPT_STACK_DEPTH, optarg)) {
				return EXIT_USAGE;
			}
			break;
		case OPT_THROTTLE_US:
			if (parse_count("--throttle-us", optarg, 10000000, &v) <
			    0) {
				return EXIT_USAGE;
			}
			o.throttle_us = (unsigned int)v;
			break;
		case OPT_STATS:
			o.print_summary = 1;
			o.stats_path = optarg;
			break;
		case OPT_PID:
			if (parse_count("--pid", optarg, 0x7fffffff, &v) < 0) {
				return EXIT_USAGE;
			}
			if (o.npids == MT_ATTACH_MAX) {
				return usage_error("--pid: at most %d processes",
						   MT_ATTACH_MAX);
			}
			pids[o.npids++] = (int)v;
			o.pids = pids;
			break;
		case OPT_DURATION: {
			char *end;
			double d;

			errno = 0;
			d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d > 0) ||
			    d > 1e7) {
				return usage_error("--duration '%s': want a number of seconds above 0",
						   optarg);
			}
			o.duration_ms = (unsigned long)(d * 1000 + 0.5);
			if (!o.duration_ms) {
				o.duration_ms = 1;
			}
			break;
		}
		case 'v':
			if (mt_log_level < MT_LOG_DEBUG) {
				mt_log_level++;
			}
			if (mt_log_level < MT_LOG_INFO) {
				mt_log_level = MT_LOG_INFO;
			}
			break;
		case 'q':
			mt_log_level = MT_LOG_ERROR;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("memtrack %s (plugin ABI %d.%d)\n",
			       PACKAGE_VERSION, MT_ABI_MAJOR, MT_ABI_MINOR);
			return 0;
		case ':':
			return usage_error("option '%s' needs a value",
					   argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'",
					   argv[optind - 1]);
		}
	}
	if (optind < argc) {
		o.argv = argv + optind;
	}
	if (mt_log_level >= MT_LOG_INFO) {
		o.print_summary = 1;
	}
	o.live_status = mt_log_level >= MT_LOG_WARN && isatty(STDERR_FILENO);
	/* The default source records a command: say so before loading it (a
	 * build without it would only report a missing plugin). A source named
	 * with --source says itself whether it needs one
	 * (MT_SOURCE_NEEDS_COMMAND, checked once it is loaded). */
	if (o.npids && o.argv) {
		return usage_error("--pid and a command: give one or the other");
	}
	if (o.duration_ms && !o.npids) {
		return usage_error("--duration applies to --pid (a command's run ends with the command)");
	}
	if (!o.argv && !source_named && !o.npids) {
		return usage_error("nothing to record: give a command after '--', or --pid PID");
	}
	if (!source_named) {
		o.source = default_source(&o);
	}
	return mt_run(&o);
}
