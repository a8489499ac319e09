/*
 * memtrack report --format html: zoom, search and the self-test of the
 * flamegraph (see report-html.c; this file becomes a C string at build
 * time, report-html.js.h). No library, nothing fetched.
 *
 * Frames are the svg's <g class="f"> inside <g id="flame">: a <title>
 * "NAME (WEIGHT UNIT, PCT%)", a <rect>, a <text> when wide enough. They
 * come in depth-first order, parent before children (report-flame.c's
 * layout), the root "all" first and as wide as the graph, and the root at
 * the bottom: a frame's subtree is the run of frames after it that sit
 * higher than it. That gives the tree without any data beyond the drawing.
 */
(function () {
	'use strict';
	var NS = 'http://www.w3.org/2000/svg';
	var CHAR_PX = 7; /* as report-svg.c: a label needs 3 characters */
	var HIT = 'rgb(230,0,230)';
	var flame = document.getElementById('flame');
	var info = document.getElementById('info');
	var search = document.getElementById('search');
	var match = document.getElementById('match');
	var frames = [];
	var root = null;
	var hint = info.textContent;

	function human(v) {
		var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
		var u = 0;

		while (v >= 1024 && u < units.length - 1) {
			v /= 1024;
			u++;
		}
		return u ? v.toFixed(1) + ' ' + units[u] : v + ' B';
	}

	function read(g, i) {
		var title = g.querySelector('title').textContent;
		var cut = title.lastIndexOf(' (');
		var rect = g.querySelector('rect');
		var figures = title.slice(cut + 2, -1);

		return {
			i: i, g: g, rect: rect, text: g.querySelector('text'),
			name: title.slice(0, cut), figures: figures,
			weight: parseFloat(figures),
			bytes: figures.indexOf(' bytes,') >= 0,
			x: parseFloat(rect.getAttribute('x')),
			w: parseFloat(rect.getAttribute('width')),
			y: parseFloat(rect.getAttribute('y')),
			h: parseFloat(rect.getAttribute('height')),
			fill: rect.getAttribute('fill'),
			parent: null, end: 0
		};
	}

	/* parent and subtree end of every frame, from order and height */
	function link() {
		var path = [];

		frames.forEach(function (f, i) {
			while (path.length && path[path.length - 1].y <= f.y) {
				path.pop().end = i;
			}
			f.parent = path.length ? path[path.length - 1] : null;
			path.push(f);
		});
		path.forEach(function (f) {
			f.end = frames.length;
		});
	}

	function label(f, x, w) {
		var chars = Math.floor(w / CHAR_PX);
		var s = f.name;

		if (chars < 3) {
			if (f.text) {
				f.text.style.display = 'none';
			}
			return;
		}
		if (s.length > chars) {
			s = s.slice(0, chars - 2) + '..';
		}
		if (!f.text) {
			f.text = document.createElementNS(NS, 'text');
			f.text.setAttribute('y', (f.y + f.h - 4).toFixed(1));
			f.g.appendChild(f.text);
		}
		f.text.style.display = '';
		f.text.setAttribute('x', (x + 3).toFixed(2));
		f.text.textContent = s;
	}

	function place(f, x, w, ancestor) {
		f.g.style.display = '';
		f.rect.setAttribute('x', x.toFixed(2));
		f.rect.setAttribute('width', w.toFixed(2));
		f.g.classList.toggle('anc', ancestor);
		label(f, x, w);
	}

	/* z's subtree across the whole width, its ancestors full and faded,
	 * everything else hidden; zoom(root) is the reset */
	function zoom(z) {
		var scale = root.w / z.w;
		var a;
		var i;

		frames.forEach(function (f) {
			f.g.style.display = 'none';
		});
		for (i = z.i; i < z.end; i++) {
			place(frames[i], root.x + (frames[i].x - z.x) * scale,
			      frames[i].w * scale, false);
		}
		for (a = z.parent; a; a = a.parent) {
			place(a, root.x, root.w, true);
		}
		info.textContent = z === root ? hint :
			'zoomed into ' + z.name + ': click a faded frame or reset to zoom out';
	}

	function figures(f) {
		return f.bytes ? human(f.weight) + ' (' + f.figures + ')' :
			f.figures;
	}

	/* highlight the frames whose name holds term (any case); the share
	 * counts a match inside another match once */
	function find(term) {
		var t = term.toLowerCase();
		var n = 0;
		var weight = 0;
		var i = 0;
		var f;

		frames.forEach(function (f) {
			var hit = t !== '' && f.name.toLowerCase().indexOf(t) >= 0;

			f.rect.setAttribute('fill', hit ? HIT : f.fill);
			f.hit = hit;
			n += hit ? 1 : 0;
		});
		while (i < frames.length) {
			f = frames[i];
			if (f.hit) {
				weight += f.weight;
				i = f.end;
			} else {
				i++;
			}
		}
		if (t === '') {
			match.textContent = '';
		} else {
			match.textContent = (n === 1 ? '1 frame matches: ' :
					     n + ' frames match: ') +
				(root.bytes ? human(weight) : weight + ' allocations') +
				', ' + (100 * weight / root.weight).toFixed(2) + '% of all';
		}
	}

	function frameOf(e) {
		var g = e.target.closest ? e.target.closest('g.f') : null;

		return g ? frames[g.dataset.i] : null;
	}

	function selftest(target, term) {
		var out = document.getElementById('selftest');
		var lines = ['frames: ' + frames.length];
		var z = null;
		var w0;

		function shown() {
			return frames.filter(function (f) {
				return f.g.style.display !== 'none';
			});
		}
		function names(list) {
			return list.map(function (f) {
				return f.name;
			}).join(' | ');
		}
		frames.forEach(function (f) {
			lines.push('frame: ' + f.name);
			if (f.name === target && !z) {
				z = f;
			}
		});
		if (!z) {
			lines.push('FAIL: no frame ' + target);
		} else {
			w0 = z.rect.getAttribute('width');
			z.rect.dispatchEvent(new MouseEvent('click', { bubbles: true }));
			lines.push('zoom: ' + target + ' width ' +
				   z.rect.getAttribute('width') + ' of ' +
				   root.w.toFixed(2));
			lines.push('zoom: shown ' + names(shown()));
			lines.push('zoom: faded ' + names(frames.filter(function (f) {
				return f.g.classList.contains('anc');
			})));
			search.value = target;
			search.dispatchEvent(new Event('input'));
			lines.push('search: highlighted ' + frames.filter(function (f) {
				return f.rect.getAttribute('fill') === HIT;
			}).length + ': ' + match.textContent);
			document.getElementById('reset').click();
			lines.push('reset: ' + target + ' width ' +
				   z.rect.getAttribute('width') + ' (was ' + w0 +
				   '), shown ' + shown().length + ' of ' +
				   frames.length);
		}
		if (term !== undefined) {
			search.value = term;
			search.dispatchEvent(new Event('input'));
			lines.push('search ' + term + ': ' + match.textContent);
		}
		lines.push('ok');
		out.textContent += lines.join('\n') + '\n';
	}

	if (flame) {
		Array.prototype.forEach.call(flame.querySelectorAll('g.f'),
					     function (g, i) {
			g.dataset.i = i;
			frames.push(read(g, i));
		});
		root = frames[0];
		link();
		flame.addEventListener('click', function (e) {
			var f = frameOf(e);

			if (f) {
				zoom(f);
			}
		});
		flame.addEventListener('mouseover', function (e) {
			var f = frameOf(e);

			if (f) {
				info.textContent = f.name + ': ' + figures(f);
			}
		});
		search.addEventListener('input', function () {
			find(search.value);
		});
		document.getElementById('reset').addEventListener('click',
								function () {
			zoom(root);
		});
		document.addEventListener('keydown', function (e) {
			if (e.key === 'Escape') {
				search.value = '';
				find('');
				zoom(root);
			}
		});
		document.getElementById('sites').addEventListener('click',
								  function (e) {
			var td = e.target.closest('td.site');

			if (td) {
				search.value = td.textContent;
				find(search.value);
			}
		});
	}
	/* '#selftest=NAME' zooms into NAME and searches it; '&search=TERM'
	 * then searches TERM too */
	if (location.hash.indexOf('#selftest=') === 0) {
		selftest.apply(null, location.hash.slice(10).split('&search=')
			       .map(decodeURIComponent));
	}
}());
