/* SPDX-License-Identifier: MIT */
/*
 * Names in the report's outputs. They come from the recording (paths) and
 * from the files it names (symbols): any bytes at all. Each output gets
 * what its readers accept, the same way everywhere:
 *   - JSON: valid UTF-8 as is; each byte that does not start a valid
 *     UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing
 *     above U+10FFFF) becomes \ufffd; controls \u00XX; inside markup
 *     (the html format's data, in a script or a single-quoted attribute)
 *     '<', '>', '&' and '\'' too, so that neither an HTML nor an XML
 *     parser sees markup in it or the attribute's end;
 *   - XML (svg, html): the same U+FFFD for invalid bytes, as &#xfffd;,
 *     and for what XML 1.0 cannot hold (controls but tab, newline and
 *     return; U+FFFE and U+FFFF);
 *   - stacks joined by ';' (collapsed, svg and html titles): ';', '\'
 *     and controls become \xHH, so that a frame is never split;
 *   - a frame on a line of its own (text, diff): '\' and controls become
 *     \xHH, so that a frame is one line and writes nothing a terminal
 *     obeys.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include "report-model.h"

/* Length of the valid UTF-8 sequence at s (2 to 4 bytes; s[0] >= 0x80), 0
 * when s[0] does not start one. *cp gets its code point. The string's NUL
 * is no continuation byte: nothing is read past it. */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	unsigned char c = s[0];
	uint32_t v, min;
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			return 0;
		}
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
		return 0;
	}
	*cp = v;
	return n;
}

static void json_str(FILE *out, const char *str, bool in_markup)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	fputc('"', out);
	while (*s) {
		if (*s == '"' || *s == '\\') {
			fprintf(out, "\\%c", *s++);
		} else if (*s < 0x20 ||
			   (in_markup && (*s == '<' || *s == '>' || *s == '&' ||
					  *s == '\''))) {
			fprintf(out, "\\u%04x", *s++);
		} else if (*s < 0x80) {
			fputc(*s++, out);
		} else if ((n = utf8_seq(s, &cp))) {
			fwrite(s, 1, n, out);
			s += n;
		} else {
			fputs("\\ufffd", out);
			s++;
		}
	}
	fputc('"', out);
}

void mt_rep_json_str(FILE *out, const char *str)
{
	json_str(out, str, false);
}

void mt_rep_json_str_markup(FILE *out, const char *str)
{
	json_str(out, str, true);
}

void mt_rep_xml_str(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;
	size_t n;

	while (*s) {
		unsigned char c = *s;

		if (c >= 0x80) {
			n = utf8_seq(s, &cp);
			if (n && cp != 0xfffe && cp != 0xffff) {
				fwrite(s, 1, n, out);
				s += n;
			} else {
				fputs("&#xfffd;", out);
				s++;
			}
			continue;
		}
		s++;
		switch (c) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		case '\t':
		case '\n':
		case '\r':
			/* as references: attribute values keep them too */
			fprintf(out, "&#%d;", c);
			break;
		default:
			if (c < 0x20) {
				fputs("&#xfffd;", out);
			} else {
				fputc(c, out);
			}
			break;
		}
	}
}

size_t mt_rep_frame_esc(char *dst, size_t len, const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t at = 0;

	if (!len) {
		return 0;
	}
	for (; *s; s++) {
		bool esc = *s == ';' || *s == '\\' || *s < 0x20 || *s == 0x7f;
		size_t need = esc ? 4 : 1;

		if (at + need >= len) {
			break; /* cut before a whole character or escape */
		}
		if (esc) {
			snprintf(dst + at, 5, "\\x%02x", *s);
		} else {
			dst[at] = (char)*s;
		}
		at += need;
	}
	dst[at] = '\0';
	return at;
}

void mt_rep_line_str(FILE *out, const char *name)
{
	const unsigned char *s = (const unsigned char *)name;

	for (; *s; s++) {
		if (*s == '\\' || *s < 0x20 || *s == 0x7f) {
			fprintf(out, "\\x%02x", *s);
		} else {
			fputc(*s, out);
		}
	}
}
