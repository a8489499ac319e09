// SPDX-License-Identifier: MIT
/*
 * An example third-party encoder in C++17: one CSV line per event
 * (pid,tid,timestamp,addr,type,size), one frame per batch. Built out of
 * tree against the installed headers:
 *
 *   c++ -std=c++17 $(pkg-config --cflags memtrack) -shared -fPIC \
 *       -fvisibility=hidden -o encoder-csv.so encoder.cc
 *   MEMTRACK_PLUGIN_PATH=. memtrack --encoder csv --source replay:in.mt \
 *       --sink file:out.csv
 *
 * What C++ changes: the callbacks have C language linkage (the ABI's
 * function pointer types are declared extern "C"), no exception leaves a
 * callback (the host is C: catch and return a negative errno), and the
 * structs are filled field by field, as C++17 has no designated
 * initializers.
 */
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include <memtrack/plugin.h>

namespace {

const char plugin_name[] = "csv";

std::string encode_lines(const mt_event *ev, size_t count)
{
	std::string text;

	text.reserve(count * 64);
	for (size_t i = 0; i < count; i++, ev++) {
		const char *type = mt_event_kind_name(ev->kind);

		text += std::to_string(ev->pid) + ',' +
			std::to_string(ev->tid) + ',' +
			std::to_string(ev->timestamp) + ',' +
			std::to_string(ev->addr) + ',' + (type ? type : "?") +
			',' + std::to_string(ev->size) + '\n';
	}
	return text;
}

} // namespace

extern "C" {

static int csv_create(const struct mt_host *host, const char *args,
		      void **state)
{
	if (args && *args) {
		host->log(host, MT_LOG_ERROR, plugin_name,
			  "takes no options: '%s'", args);
		return -EINVAL;
	}
	*state = nullptr;
	return 0;
}

static int csv_encode(void * /* state */, const struct mt_event *events,
		      size_t count, struct mt_frame *out)
{
	try {
		std::string text = encode_lines(events, count);
		char *buf = new char[text.size() ? text.size() : 1];

		std::memcpy(buf, text.data(), text.size());
		out->data = buf;
		out->len = text.size();
		out->raw_len = text.size();
		return 0;
	} catch (const std::bad_alloc &) {
		return -ENOMEM;
	} catch (...) {
		return -EIO;
	}
}

static void csv_frame_free(struct mt_frame *frame)
{
	delete[] static_cast<char *>(frame->data);
	frame->data = nullptr;
}

static void csv_destroy(void * /* state */)
{
}

} // extern "C"

static mt_encoder_ops make_ops()
{
	mt_encoder_ops o{}; // zero: callbacks left out are NULL, "not supported"

	o.size = sizeof(o);
	o.abi_major = MT_ABI_MAJOR;
	o.abi_minor = MT_ABI_MINOR;
	o.create = csv_create;
	o.encode = csv_encode;
	o.frame_free = csv_frame_free;
	o.destroy = csv_destroy;
	return o;
}

static const mt_encoder_ops csv_ops = make_ops();

static mt_plugin_desc make_desc()
{
	mt_plugin_desc d{};

	d.size = sizeof(d);
	d.abi_major = MT_ABI_MAJOR;
	d.abi_minor = MT_ABI_MINOR;
	d.kind = MT_PLUGIN_ENCODER;
	d.name = plugin_name;
	d.description = "example in C++: CSV, one line per event";
	d.version = "1.0";
	d.ops.encoder = &csv_ops;
	return d;
}

static const mt_plugin_desc csv_desc = make_desc();

MT_PLUGIN_DEFINE(csv_desc)
