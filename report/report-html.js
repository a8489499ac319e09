/*
 * memtrack report --format html: the views of the page (see report-html.c;
 * this file becomes a C string at build time, report-html.js.h). No
 * library, nothing fetched.
 *
 * Everything is drawn from the JSON in <script id="mt-data">: the sites,
 * each with its frames (root first, the process first), the frame that
 * names it, its five figures and its live bytes at each checkpoint. From
 * them come two trees: top-down (callers first, as the stacks read) and
 * bottom-up (the allocating function first). Each tree is shown as a
 * flame graph (top-down upright; "inverted" is the bottom-up one) or as a
 * table whose rows open and close and whose columns sort. A range dragged
 * on the memory chart selects the checkpoint at its end: the sixth figure,
 * "live at the selection's end", and a table of the sites live then. A
 * diff (report --diff) has B's figures where a report has its own, A's
 * after them, and two charts, A's and B's: a range dragged on either
 * selects in both, and every view shows B's figure against A's.
 *
 * The flame graph's frames are <g class="f"> in <g id="flame">, each with
 * a <title> "NAME (WEIGHT UNIT, PCT%)", a <rect> and a <text> when wide
 * enough, in depth-first order, the root "all" first and at the bottom.
 *
 * '#selftest=NAME[&search=TERM]' zooms into frame NAME and searches;
 * '#views=A,B' goes through every view and figure, drags the chart from
 * A to B (fractions of its width) and marks the tables of sites by a
 * search; '#diff[=A,B,C,D]' goes through a diff's figures and drags its
 * charts (selftestDiff()). Each writes what it saw into the page's
 * selftest <pre>, which a headless browser dumps for
 * tests/test-report-html.sh.
 */
(function () {
	'use strict';
	var NS = 'http://www.w3.org/2000/svg';
	var CHAR_PX = 7; /* as report-svg.c: a label needs 3 characters */
	var HIT = 'rgb(230,0,230)';
	var WIDTH = 1200, LEFT = 80, RIGHT = 20, ROW = 17, MIN_PX = 0.3;
	var TREE_KIDS = 200; /* rows shown under one node; then "N more" */
	var FIGURES = [
		{ name: 'allocated', unit: 'bytes' },
		{ name: 'allocations', unit: 'allocations' },
		{ name: 'temporary', unit: 'allocations' },
		{ name: 'at peak', unit: 'bytes' },
		{ name: 'leaked', unit: 'bytes' },
		{ name: 'live at the selection\'s end', unit: 'bytes' }
	];
	var LIVE = 5;
	var $ = function (id) { return document.getElementById(id); };
	var data = JSON.parse($('mt-data').textContent);
	var diff = !!data.diff; /* report --diff: figures B's, A's in va */
	var flame = $('flame'), flamesvg = $('flamesvg');
	var info = $('info'), search = $('search'), match = $('match');
	var view = $('view'), metric = $('metric'), invert = $('invert');
	var hint = info.textContent;
	var frames = []; /* the flame graph drawn */
	var root = null;
	var trees = {};
	var nodes = []; /* every tree's nodes, by id */
	/* the memory charts (a diff's A and B), each with the checkpoint
	 * selected (k, -1: none; see "the time selection" below); a site's
	 * figures v are the last chart's, a diff's va the first's */
	var charts = (data.charts || []).map(function (c) {
		c.el = $(c.id);
		c.k = -1;
		c.shares = [];
		return c;
	}).filter(function (c) {
		return c.el;
	});
	var chartB = charts.length ? charts[charts.length - 1] : null;
	var chartA = diff && charts.length > 1 ? charts[0] : null;
	var sortBy = -1; /* the tree table's column; -1: the figure shown */

	function human(v) {
		var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
		var u = 0;

		while (v >= 1024 && u < units.length - 1) {
			v /= 1024;
			u++;
		}
		return u ? v.toFixed(1) + ' ' + units[u] : v + ' B';
	}

	/* a count in units, as the page's tables give it: 34.5k, 1.2M */
	function humanCount(v) {
		var units = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
		var u = 0;

		while (v >= 999.95 && u < units.length - 1) {
			v /= 1000;
			u++;
		}
		return u ? v.toFixed(1) + units[u] : String(v);
	}

	function humanTime(ns) {
		return ns < 1e9 ? (ns / 1e6).toFixed(3) + ' ms' :
			(ns / 1e9).toFixed(3) + ' s';
	}

	function show(m, v) {
		return FIGURES[m].unit === 'bytes' ? human(v) : humanCount(v);
	}

	function selected() {
		return charts.some(function (c) {
			return c.k >= 0;
		});
	}

	/* a site's live bytes at chart c's checkpoint selected */
	function liveAt(s, c) {
		return c && c.k >= 0 && s[c.col] ? s[c.col][c.k] : 0;
	}

	/* a site's figure m (in a diff, B's) */
	function siteValue(s, m) {
		return m === LIVE ? liveAt(s, chartB) : s[2 + m];
	}

	/* a diff's site's figure m in A */
	function siteValueA(s, m) {
		return m === LIVE ? liveAt(s, chartA) : s[8 + m];
	}

	/* the tree of the sites' stacks: top-down from the process, or
	 * bottom-up from the allocating function to the process */
	function build(bottomUp) {
		var top = { id: nodes.length, name: 'all', kids: [], by: {},
			    v: [0, 0, 0, 0, 0, 0], va: [0, 0, 0, 0, 0, 0],
			    parent: null, depth: 0, open: true };
		var n;

		nodes.push(top);
		data.sites.forEach(function (s) {
			var fr = s[0].slice();
			var at = top, j, name, path = [top];

			if (bottomUp) {
				fr.reverse();
			}
			for (j = 0; j < fr.length; j++) {
				name = data.names[fr[j]];
				n = Object.prototype.hasOwnProperty.call(at.by, name) ?
					at.by[name] : null;
				if (!n) {
					n = { id: nodes.length, name: name, kids: [],
					      by: {}, v: [0, 0, 0, 0, 0, 0],
					      va: [0, 0, 0, 0, 0, 0],
					      parent: at, depth: at.depth + 1,
					      open: false };
					nodes.push(n);
					at.by[name] = n;
					at.kids.push(n);
				}
				at = n;
				path.push(n);
			}
			s.paths = s.paths || {};
			s.paths[bottomUp ? 'up' : 'down'] = path;
			path.forEach(function (p) {
				var m;

				for (m = 0; m <= LIVE; m++) {
					p.v[m] += siteValue(s, m);
				}
				for (m = 0; diff && m <= LIVE; m++) {
					p.va[m] += siteValueA(s, m);
				}
			});
		});
		/* open the one-child chain from the root (one process,
		 * _start, ...) down to where it branches */
		for (n = top; n.kids.length === 1; n = n.kids[0]) {
			n.kids[0].open = true;
		}
		return top;
	}

	function tree(bottomUp) {
		var key = bottomUp ? 'up' : 'down';

		if (!trees[key]) {
			trees[key] = build(bottomUp);
		}
		return trees[key];
	}

	/* the live figure of every node at the checkpoints selected */
	function relive() {
		nodes.forEach(function (n) {
			n.v[LIVE] = 0;
			n.va[LIVE] = 0;
		});
		Object.keys(trees).forEach(function (key) {
			data.sites.forEach(function (s) {
				var v = siteValue(s, LIVE);
				var va = diff ? siteValueA(s, LIVE) : 0;

				s.paths[key].forEach(function (p) {
					p.v[LIVE] += v;
					p.va[LIVE] += va;
				});
			});
		});
	}

	/* a diff's rows by the size of their change */
	function byValue(m) {
		return function (a, b) {
			var d = diff ? Math.abs(b.v[m] - b.va[m]) -
				Math.abs(a.v[m] - a.va[m]) : b.v[m] - a.v[m];

			return d || (a.name < b.name ? -1 :
				     a.name > b.name ? 1 : 0);
		};
	}

	/* a frame's width: in a diff both sides', so what went away shows */
	function wOf(n, m) {
		return diff ? n.v[m] + n.va[m] : n.v[m];
	}

	function signed(m, d) {
		return (d < 0 ? '-' : '+') + show(m, Math.abs(d));
	}

	function change(n, m) {
		return n.v[m] > n.va[m] ? 'grow' : n.v[m] < n.va[m] ? 'shrink' :
			'same';
	}

	/* red where it grew, blue where it shrank, by how much of it */
	function diffFill(n, m) {
		var most = Math.max(n.v[m], n.va[m]) || 1;
		var r = Math.abs(n.v[m] - n.va[m]) / most;
		var c = Math.round(230 - 170 * r);

		return n.v[m] > n.va[m] ? 'rgb(255,' + c + ',' + c + ')' :
			n.v[m] < n.va[m] ? 'rgb(' + c + ',' + c + ',255)' :
			'rgb(225,225,225)';
	}

	function figure() {
		return parseInt(metric.value, 10);
	}

	/* ---- the flame graph ------------------------------------------ */

	function hashName(s) {
		var h = 2166136261, i;

		for (i = 0; i < s.length; i++) {
			h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
		}
		return h;
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
			f.text.setAttribute('y', (f.y + f.h - 5).toFixed(1));
			f.g.appendChild(f.text);
		}
		f.text.style.display = '';
		f.text.setAttribute('x', (x + 3).toFixed(2));
		f.text.textContent = s;
	}

	/* frames in depth-first order, parent first, sorted by name as
	 * flame graphs are; those narrower than MIN_PX are left out */
	function draw() {
		var m = figure();
		var t = tree(invert.checked);
		var cw = WIDTH - LEFT - RIGHT;
		var total = wOf(t, m);
		var list = [], depth = 0, top = 4;
		var byName = function (a, b) {
			return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
		};

		function walk(n, d, x) {
			var w = total ? wOf(n, m) / total * cw : 0;

			if (w < MIN_PX || !wOf(n, m)) {
				return;
			}
			list.push({ n: n, d: d, x: x, w: Math.min(w, cw) });
			depth = Math.max(depth, d + 1);
			n.kids.slice().sort(byName).forEach(function (k) {
				walk(k, d + 1, x);
				x += total ? wOf(k, m) / total * cw : 0;
			});
		}
		while (flame.firstChild) {
			flame.removeChild(flame.firstChild);
		}
		frames = [];
		walk(t, 0, LEFT);
		flamesvg.setAttribute('height', top + depth * ROW + 20);
		flamesvg.setAttribute('viewBox', '0 0 ' + WIDTH + ' ' +
				      (top + depth * ROW + 20));
		$('flamehead').textContent = (diff ? 'Diff: ' : '') + (invert.checked ?
			'Inverted flame graph (allocating functions at the root) of ' :
			'Flame graph of ') + FIGURES[m].name +
			(m === LIVE ? ' (' + $('range').textContent + ')' : '') +
			'; hover for figures, click to zoom';
		list.forEach(function (e, i) {
			var g = document.createElementNS(NS, 'g');
			var title = document.createElementNS(NS, 'title');
			var rect = document.createElementNS(NS, 'rect');
			var h = hashName(e.n.name);
			var y = top + (depth - 1 - e.d) * ROW;
			var fill = diff ? diffFill(e.n, m) :
				'rgb(' + (205 + h % 50) + ',' +
				(80 + (h >>> 8) % 130) + ',' +
				(40 + (h >>> 16) % 40) + ')';
			var figures = diff ? e.n.va[m] + ' -> ' + e.n.v[m] + ' ' +
				FIGURES[m].unit + ', ' +
				signed(m, e.n.v[m] - e.n.va[m]) :
				e.n.v[m] + ' ' + FIGURES[m].unit + ', ' +
				(100 * e.n.v[m] / total).toFixed(2) + '%';

			g.setAttribute('class', diff ? 'f ' + change(e.n, m) : 'f');
			g.dataset.i = i;
			title.textContent = e.n.name + ' (' + figures + ')';
			rect.setAttribute('x', e.x.toFixed(2));
			rect.setAttribute('y', y.toFixed(1));
			rect.setAttribute('width', e.w.toFixed(2));
			rect.setAttribute('height', ROW - 1);
			rect.setAttribute('rx', 2);
			rect.setAttribute('fill', fill);
			g.appendChild(title);
			g.appendChild(rect);
			flame.appendChild(g);
			frames.push({
				i: i, g: g, rect: rect, text: null, node: e.n,
				name: e.n.name, figures: figures,
				weight: wOf(e.n, m), bytes: FIGURES[m].unit === 'bytes',
				x: e.x, w: e.w, y: y, h: ROW - 1, fill: fill,
				parent: null, end: 0, depth: e.d
			});
		});
		link();
		frames.forEach(function (f) {
			label(f, f.x, f.w);
		});
		root = frames.length ? frames[0] : null;
	}

	/* parent and subtree end of every frame, from order and depth */
	function link() {
		var path = [];

		frames.forEach(function (f, i) {
			while (path.length && path[path.length - 1].depth >= f.depth) {
				path.pop().end = i;
			}
			f.parent = path.length ? path[path.length - 1] : null;
			path.push(f);
		});
		path.forEach(function (f) {
			f.end = frames.length;
		});
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
		var scale, a, i;

		if (!root) {
			return;
		}
		scale = root.w / z.w;
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

	function figuresOf(f) {
		if (diff) {
			return show(figure(), f.node.va[figure()]) + ' -> ' +
				show(figure(), f.node.v[figure()]) + ' (' +
				signed(figure(), f.node.v[figure()] -
				       f.node.va[figure()]) + ')';
		}
		return f.bytes ? human(f.weight) + ' (' + f.figures + ')' :
			f.figures;
	}

	function hits(name, t) {
		return t !== '' && name.toLowerCase().indexOf(t) >= 0;
	}

	/* in a diff, weight and total are [A, B] */
	function matchText(n, weight, total, m) {
		if (diff) {
			return (n === 1 ? '1 frame matches: ' : n + ' frames match: ') +
				show(m, weight[0]) + ' -> ' + show(m, weight[1]) +
				' (' + signed(m, weight[1] - weight[0]) + ')';
		}
		return (n === 1 ? '1 frame matches: ' : n + ' frames match: ') +
			(FIGURES[m].unit === 'bytes' ? human(weight) :
			 humanCount(weight) + ' ' + FIGURES[m].unit) + ', ' +
			(total ? 100 * weight / total : 0).toFixed(2) + '% of all';
	}

	/* highlight the frames whose name holds term (any case); the share
	 * counts a match inside another match once */
	function findFlame(t) {
		var n = 0, weight = 0, i = 0, f, ab = [0, 0], m = figure();

		frames.forEach(function (f) {
			f.hit = hits(f.name, t);
			f.rect.setAttribute('fill', f.hit ? HIT : f.fill);
			n += f.hit ? 1 : 0;
		});
		while (i < frames.length) {
			f = frames[i];
			if (f.hit) {
				weight += f.weight;
				ab[0] += f.node.va[m];
				ab[1] += f.node.v[m];
				i = f.end;
			} else {
				i++;
			}
		}
		match.textContent = t === '' ? '' :
			matchText(n, diff ? ab : weight, root ? root.weight : 0, m);
	}

	/* ---- the tree tables ------------------------------------------ */

	function column() {
		return sortBy >= 0 ? sortBy : figure();
	}

	/* the rows shown: open nodes' children, each sorted by the column */
	function rows() {
		var out = [], m = column();

		function walk(n) {
			var kids, i;

			out.push({ n: n });
			if (!n.open) {
				return;
			}
			kids = n.kids.slice().sort(byValue(m));
			for (i = 0; i < kids.length && i < TREE_KIDS; i++) {
				walk(kids[i]);
			}
			if (kids.length > TREE_KIDS) {
				out.push({ more: kids.length - TREE_KIDS,
					   depth: n.depth + 1 });
			}
		}
		walk(tree(view.value === 'bottom-up'));
		return out;
	}

	function drawTree() {
		var body = $('tree').querySelector('tbody');
		var t = search.value.toLowerCase();
		var m = column();
		var html = [];

		Array.prototype.forEach.call($('tree').querySelectorAll('th'),
					     function (th) {
			var c = th.dataset.m === undefined ? -2 :
				parseInt(th.dataset.m, 10);

			th.classList.toggle('sorted', c === m);
			if (c === LIVE) {
				th.hidden = !selected();
			}
		});
		rows().forEach(function (r) {
			var n = r.n, c, cells = '';

			if (!n) {
				html.push('<tr><td class="fn" style="padding-left:' +
					  r.depth + 'em">... ' + r.more +
					  ' more</td></tr>');
				return;
			}
			for (c = 0; c <= LIVE; c++) {
				if (c === LIVE && !selected()) {
					break;
				}
				cells += diff ? '<td class="' + change(n, c) +
					'" title="' + n.va[c] + ' -> ' + n.v[c] + ' ' +
					FIGURES[c].unit + '">' + show(c, n.v[c]) + ' (' +
					signed(c, n.v[c] - n.va[c]) + ')</td>' :
					'<td title="' + n.v[c] + ' ' +
					FIGURES[c].unit + '">' + show(c, n.v[c]) +
					'</td>';
			}
			html.push('<tr data-id="' + n.id + '"' +
				  (hits(n.name, t) ? ' class="hit"' : '') +
				  '><td class="fn" style="padding-left:' +
				  (n.depth + 0.3) + 'em" title="' + esc(n.name) +
				  '">' + (n.kids.length ? (n.open ? '\u25be ' :
							   '\u25b8 ') : '\u2003') +
				  esc(n.name) + '</td>' + cells + '</tr>');
		});
		body.innerHTML = html.join('');
	}

	/* a frame as report.c joins it: ';' and '\\' as \\xHH */
	function joinable(f) {
		return f.replace(/\\/g, '\\x5c').replace(/;/g, '\\x3b');
	}

	function esc(s) {
		return s.replace(/&/g, '&amp;').replace(/</g, '&lt;')
			.replace(/>/g, '&gt;').replace(/"/g, '&quot;');
	}

	/* open the paths to the nodes that match; the share counts a match
	 * under another match once */
	function findTree(t) {
		var top = tree(view.value === 'bottom-up'), m = column();
		var n = 0, weight = 0, ab = [0, 0];

		function walk(x, inHit) {
			var hit = x !== top && hits(x.name, t);
			var below = false;

			if (hit) {
				n++;
				if (!inHit) {
					weight += x.v[m];
					ab[0] += x.va[m];
					ab[1] += x.v[m];
				}
			}
			x.kids.forEach(function (k) {
				below = walk(k, inHit || hit) || below;
			});
			if (below) {
				x.open = true;
			}
			return hit || below;
		}
		if (t !== '') {
			walk(top, false);
		}
		match.textContent = t === '' ? '' :
			matchText(n, diff ? ab : weight, top.v[m], m);
	}

	/* ---- the tables of sites --------------------------------------- */

	/* a site cell's frames, root first, whole: its data-frames (JSON);
	 * its title joins them with ';', escaped, for the eye only */
	function cellFrames(td) {
		if (!td.frames) {
			td.frames = JSON.parse(td.dataset.frames);
		}
		return td.frames;
	}

	/*
	 * Mark the rows of the top sites and of the live sites whose stack
	 * holds a frame that matches, as the flame graph marks frames: a
	 * site found by one of its callers is marked too, though its row
	 * names the allocating function. Frame by frame: a term matches
	 * within one frame, never across two.
	 */
	function markRows() {
		var t = search.value.toLowerCase();

		['sites', 'live'].forEach(function (id) {
			var table = $(id);

			if (!table) {
				return;
			}
			/* the whole stack opened under a row has none */
			Array.prototype.forEach.call(
				table.querySelectorAll('td.site[data-frames]'),
				function (td) {
					td.parentNode.classList.toggle('hit',
						cellFrames(td).some(function (f) {
							return hits(f, t);
						}));
				});
		});
	}

	/* ---- the time selection --------------------------------------- */

	/*
	 * Each chart has its checkpoints: chart c's checkpoint k ends
	 * (k + 1) * c.cpStep ns after its recording's first event and holds
	 * each site's live bytes then, at s[c.col][k]. A range t0..t1 (ns
	 * from each recording's start) selects in every chart the checkpoint
	 * that holds t1: the range's end snaps to that checkpoint's end,
	 * which the chart marks with a dashed line. In a diff both charts
	 * are on one scale, so a range dragged on either is the same in both.
	 */
	var drag = null; /* { c: the chart, x: where the drag began } */

	function chartX(c, e) {
		var box = c.el.getBoundingClientRect();
		var x = (e.clientX - box.left) * WIDTH / box.width;

		return Math.max(c.plot[0], Math.min(c.plot[0] + c.plot[2], x));
	}

	function timeAt(c, x) {
		return (x - c.plot[0]) / c.plot[2] * c.span;
	}

	function xAt(c, t) {
		return Math.min(c.plot[0] + c.plot[2],
				c.plot[0] + c.plot[2] * t / (c.span || 1));
	}

	/* the moment chart c's selected checkpoint ends, ns */
	function cpEnd(c) {
		return (c.k + 1) * c.cpStep;
	}

	function sideOf(c) {
		return diff ? (c === chartA ? 'A' : 'B') : '';
	}

	/* the live sites' row: a report's live, allocated and leaked bytes;
	 * a diff's live bytes in A and in B, and the change */
	function liveCells(s) {
		var a = siteValueA(s, LIVE), b = siteValue(s, LIVE);

		if (diff) {
			return '<td>' + human(a) + '</td><td>' + human(b) +
				'</td><td class="' + (b > a ? 'grow' : b < a ?
						      'shrink' : 'same') + '">' +
				signed(LIVE, b - a) + '</td>';
		}
		return '<td>' + human(b) + '</td><td>' + human(s[2]) +
			'</td><td>' + human(s[6]) + '</td>';
	}

	/* the sites live at the selection's end, the most first (in a diff:
	 * live in either, the biggest change first) */
	function liveTable() {
		var body = $('live').querySelector('tbody');
		var top = tree(false);
		var size = function (s) {
			return diff ? Math.abs(siteValue(s, LIVE) -
					       siteValueA(s, LIVE)) :
				siteValue(s, LIVE);
		};
		var list = data.sites.filter(function (s) {
			return siteValue(s, LIVE) > 0 ||
				(diff && siteValueA(s, LIVE) > 0);
		}).sort(function (a, b) {
			return size(b) - size(a) ||
				siteValue(b, LIVE) - siteValue(a, LIVE);
		}).slice(0, 20);

		$('livehead').textContent = 'Sites live at ' + charts.filter(
			function (c) {
				return c.k >= 0;
			}).map(function (c) {
				return (diff ? sideOf(c) + ' ' : '') +
					humanTime(cpEnd(c));
			}).join(', ') + ': ' + (diff ? human(top.va[LIVE]) +
			' -> ' + human(top.v[LIVE]) + ' (' +
			signed(LIVE, top.v[LIVE] - top.va[LIVE]) + ')' :
						   human(top.v[LIVE]));
		body.innerHTML = list.map(function (s, i) {
			var fr = s[0].map(function (f) {
				return data.names[f];
			});

			return '<tr><td>' + (i + 1) + '</td><td class="site" title="' +
				esc(fr.map(joinable).join(';')) + '" data-frames="' +
				esc(JSON.stringify(fr)) + '">' + esc(fr[s[1]]) +
				'</td>' + liveCells(s) + '</tr>';
		}).join('') || '<tr><td colspan="5">(nothing live)</td></tr>';
		$('livebox').hidden = false;
	}

	/* the range t0..t1 (ns) on every chart; with snap, the end of the
	 * checkpoint selected as a dashed line */
	function selRect(c, t0, t1, snap) {
		var x0 = xAt(c, t0), x1 = xAt(c, t1);

		if (!c.sel) {
			c.sel = document.createElementNS(NS, 'rect');
			c.sel.setAttribute('class', 'sel');
			c.sel.setAttribute('fill', 'rgba(70,130,230,0.25)');
			c.sel.setAttribute('stroke', '#4682e6');
			c.sel.setAttribute('y', c.plot[1]);
			c.sel.setAttribute('height', c.plot[3]);
			c.el.appendChild(c.sel);
			c.snap = document.createElementNS(NS, 'line');
			c.snap.setAttribute('class', 'snap');
			c.snap.setAttribute('stroke', '#234');
			c.snap.setAttribute('stroke-dasharray', '4,3');
			c.snap.setAttribute('y1', c.plot[1]);
			c.snap.setAttribute('y2', c.plot[1] + c.plot[3]);
			c.snap.appendChild(document.createElementNS(NS, 'title'));
			c.el.appendChild(c.snap);
		}
		c.sel.setAttribute('x', x0.toFixed(1));
		c.sel.setAttribute('width', (x1 - x0).toFixed(1));
		c.snap.style.display = snap && c.k >= 0 ? '' : 'none';
		if (snap && c.k >= 0) {
			c.snap.setAttribute('x1', xAt(c, cpEnd(c)).toFixed(1));
			c.snap.setAttribute('x2', xAt(c, cpEnd(c)).toFixed(1));
			c.snap.firstChild.textContent = 'live at ' +
				humanTime(cpEnd(c)) + ': the end of the checkpoint ' +
				'that holds the range\'s end';
		}
	}

	/* the range t0..t1 (ns): what was live at its end, at the end of the
	 * checkpoint that holds it, in every chart */
	function select(t0, t1) {
		var opt = metric.querySelector('option[value="' + LIVE + '"]');

		charts.forEach(function (c) {
			c.k = c.cpN ? Math.max(0, Math.min(c.cpN - 1,
					Math.floor(t1 / c.cpStep))) : -1;
			selRect(c, t0, t1, true);
		});
		if (!selected()) {
			$('range').textContent = 'no checkpoints in this recording';
			return;
		}
		$('range').textContent = 'selected ' + humanTime(t0) + ' to ' +
			humanTime(t1) + (diff ? ' after each recording\'s start' :
					 '') + ': ' + charts.map(function (c) {
				return (diff ? sideOf(c) + ' ' : '') + (c.k < 0 ?
					'has no checkpoints' : 'live at ' +
					humanTime(cpEnd(c)) + ' (checkpoints every ' +
					humanTime(c.cpStep) + ')');
			}).join(', ') + '; the range\'s end snaps to the end ' +
			'of its checkpoint';
		relive();
		opt.disabled = false;
		metric.value = String(LIVE);
		liveTable();
		refresh();
	}

	/*
	 * The top sites' share of chart c: the SHARES sites with the most
	 * bytes live at some checkpoint, stacked, each checkpoint's figure
	 * drawn across its span, under the processes' lines; a site in
	 * both of a diff's charts in one colour.
	 */
	var SHARES = 5;
	var SHARE_COLORS = ['#8dd3c7', '#fdb462', '#bebada', '#fb8072', '#80b1d3',
			    '#b3de69', '#fccde5', '#bc80bd', '#ccebc5', '#ffed6f'];
	var shareColor = {}, shareColors = 0; /* by site: one in both charts */

	function colorOf(s) {
		var i = data.sites.indexOf(s);

		if (!Object.prototype.hasOwnProperty.call(shareColor, i)) {
			shareColor[i] = SHARE_COLORS[shareColors++ %
						     SHARE_COLORS.length];
		}
		return shareColor[i];
	}

	function shares(c) {
		var lines = c.el.querySelector('g');
		var plot = c.plot, cum = [], k;
		var most = function (s) {
			return s[c.col] ? Math.max.apply(null, s[c.col]) : 0;
		};
		var X = function (t) {
			return xAt(c, t).toFixed(1);
		};
		var Y = function (v) {
			return (plot[1] + plot[3] - plot[3] * Math.min(1, v /
					(c.ymax || 1))).toFixed(1);
		};

		if (!lines || !c.cpN) {
			return;
		}
		c.shares = data.sites.filter(function (s) {
			return most(s) > 0;
		}).sort(function (a, b) {
			return most(b) - most(a);
		}).slice(0, SHARES);
		for (k = 0; k < c.cpN; k++) {
			cum.push(0);
		}
		c.shares.forEach(function (s, i) {
			var up = [], down = [], poly, title, text, box;
			var name = data.names[s[0][s[1]]];

			for (k = 0; k < c.cpN; k++) {
				down.unshift(X((k + 1) * c.cpStep) + ',' + Y(cum[k]),
					     X(k * c.cpStep) + ',' + Y(cum[k]));
				cum[k] += s[c.col][k];
				up.push(X(k * c.cpStep) + ',' + Y(cum[k]),
					X((k + 1) * c.cpStep) + ',' + Y(cum[k]));
			}
			poly = document.createElementNS(NS, 'polygon');
			poly.setAttribute('class', 'share');
			poly.setAttribute('points', up.concat(down).join(' '));
			poly.setAttribute('fill', colorOf(s));
			poly.setAttribute('fill-opacity', '0.6');
			title = document.createElementNS(NS, 'title');
			title.textContent = name + ': at most ' + human(most(s)) +
				' live at a checkpoint';
			poly.appendChild(title);
			c.el.insertBefore(poly, lines);
			box = document.createElementNS(NS, 'rect');
			box.setAttribute('x', plot[0] + i * 220);
			box.setAttribute('y', plot[1] + plot[3] + 58);
			box.setAttribute('width', 10);
			box.setAttribute('height', 10);
			box.setAttribute('fill', colorOf(s));
			c.el.appendChild(box);
			text = document.createElementNS(NS, 'text');
			text.setAttribute('x', plot[0] + i * 220 + 14);
			text.setAttribute('y', plot[1] + plot[3] + 67);
			text.textContent = name.length > 28 ?
				name.slice(0, 26) + '..' : name;
			text.appendChild(title.cloneNode(true));
			c.el.appendChild(text);
		});
	}

	/* a range dragged on either chart shows on both */
	function dragTo(e) {
		var t0 = timeAt(drag.c, drag.x), t1 = timeAt(drag.c, chartX(drag.c, e));

		return [Math.min(t0, t1), Math.max(t0, t1)];
	}

	charts.forEach(function (c) {
		shares(c);
		c.el.addEventListener('mousedown', function (e) {
			drag = { c: c, x: chartX(c, e) };
			e.preventDefault();
		});
		c.el.addEventListener('mousemove', function (e) {
			var t;

			if (drag && drag.c === c) {
				t = dragTo(e);
				charts.forEach(function (d) {
					selRect(d, t[0], t[1], false);
				});
			}
		});
		c.el.addEventListener('mouseup', function (e) {
			var t;

			if (!drag || drag.c !== c) {
				return;
			}
			t = dragTo(e);
			drag = null;
			select(t[0], t[1]);
		});
	});

	/* ---- the page ------------------------------------------------- */

	function refresh() {
		var isFlame = view.value === 'flame';

		$('flamebox').hidden = !isFlame;
		$('treebox').hidden = isFlame;
		invert.parentNode.style.visibility = isFlame ? '' : 'hidden';
		$('reset').style.visibility = isFlame ? '' : 'hidden';
		if (isFlame) {
			draw();
			findFlame(search.value.toLowerCase());
		} else {
			findTree(search.value.toLowerCase());
			drawTree();
		}
		markRows();
	}

	function frameOf(e) {
		var g = e.target.closest ? e.target.closest('g.f') : null;

		return g ? frames[g.dataset.i] : null;
	}

	flame.addEventListener('click', function (e) {
		var f = frameOf(e);

		if (f) {
			zoom(f);
		}
	});
	flame.addEventListener('mouseover', function (e) {
		var f = frameOf(e);

		if (f) {
			info.textContent = f.name + ': ' + figuresOf(f);
		}
	});
	/* the flame graph keeps its zoom while searching */
	search.addEventListener('input', function () {
		if (view.value === 'flame') {
			findFlame(search.value.toLowerCase());
			markRows();
		} else {
			refresh();
		}
	});
	$('reset').addEventListener('click', function () {
		zoom(root);
	});
	[view, metric, invert].forEach(function (el) {
		el.addEventListener('change', function () {
			sortBy = -1;
			refresh();
		});
	});
	$('tree').addEventListener('click', function (e) {
		var th = e.target.closest('th'), tr = e.target.closest('tr');

		if (th && th.dataset.m !== undefined) {
			sortBy = parseInt(th.dataset.m, 10);
			drawTree();
		} else if (tr && tr.dataset.id !== undefined) {
			nodes[tr.dataset.id].open = !nodes[tr.dataset.id].open;
			drawTree();
		}
	});
	document.addEventListener('keydown', function (e) {
		if (e.key === 'Escape') {
			search.value = '';
			refresh();
			zoom(root);
		}
	});
	/* a click on a top site: its whole stack under it, innermost
	 * frame first, and a search for it in the current view */
	if ($('sites')) {
		$('sites').addEventListener('click', function (e) {
			var td = e.target.closest('td.site');
			var tr, next, cell;

			if (!td) {
				return;
			}
			tr = td.parentNode;
			next = tr.nextElementSibling;
			if (next && next.classList.contains('stack')) {
				next.parentNode.removeChild(next);
			} else {
				next = document.createElement('tr');
				next.className = 'stack';
				cell = document.createElement('td');
				cell.colSpan = tr.children.length;
				cell.className = 'site';
				cell.style.whiteSpace = 'pre';
				cell.textContent = cellFrames(td).slice().reverse()
					.join('\n');
				next.appendChild(cell);
				tr.parentNode.insertBefore(next, tr.nextSibling);
			}
			/* the name alone: the lines under it are its
			 * callers */
			search.value = (td.querySelector('.name') || td)
				.textContent;
			search.dispatchEvent(new Event('input'));
		});
	}
	refresh();

	/* ---- self-tests ----------------------------------------------- */

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

	function selftest(target, term) {
		var lines = ['frames: ' + frames.length];
		var z = null, w0, th;

		frames.forEach(function (f) {
			lines.push('frame: ' + f.name);
			/* a function, with or without its (file:line) */
			if (!z && (f.name === target ||
				   f.name.indexOf(target + ' (') === 0)) {
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
			$('reset').click();
			lines.push('reset: ' + target + ' width ' +
				   z.rect.getAttribute('width') + ' (was ' + w0 +
				   '), shown ' + shown().length + ' of ' +
				   frames.length);
		}
		if (term !== undefined) {
			search.value = term;
			search.dispatchEvent(new Event('input'));
			lines.push('search ' + term + ': ' + match.textContent);
			lines.push('marked ' + term + ': top sites ' +
				   marked('sites'));
			/* the whole run: the sites live at its end */
			if (chartB && chartB.cpN) {
				mouse(chartB, 'mousedown', 0);
				mouse(chartB, 'mouseup', 1);
				lines.push('marked ' + term + ': live ' +
					   marked('live'));
			}
			th = $('sites').querySelector('tr.hit td.site');
			if (th) {
				th.dispatchEvent(new MouseEvent('click',
								{ bubbles: true }));
				lines.push('marked ' + term + ': its stack ' +
					   $('sites').querySelector('tr.stack')
					   .textContent.split('\n').join(' | '));
			}
		}
		lines.push('ok');
		$('selftest').textContent += lines.join('\n') + '\n';
	}

	function choose(el, value) {
		if (el.type === 'checkbox') {
			el.checked = value;
		} else {
			el.value = value;
		}
		el.dispatchEvent(new Event('change'));
	}

	/* the frames drawn just above the root, widest first */
	function flameTop() {
		var list = frames.filter(function (f) {
			return f.parent === root;
		}).sort(function (a, b) {
			return b.weight - a.weight;
		});

		return list.map(function (f) {
			return f.name + '=' + f.weight;
		}).join(' | ');
	}

	function treeRows() {
		return Array.prototype.map.call($('tree').querySelectorAll('tbody tr'),
						function (tr) {
			var td = tr.querySelectorAll('td');
			var n = tr.dataset.id !== undefined ? nodes[tr.dataset.id] : null;

			var c = column();

			return (n ? n.depth + ':' + n.name : td[0].textContent) +
				(n ? '=' + (diff ? n.va[c] + '->' : '') + n.v[c] : '');
		}).join(' | ');
	}

	/* a range dragged on chart c from a to b (fractions of its width) */
	function drag3(c, a, b) {
		mouse(c, 'mousedown', a);
		mouse(c, 'mousemove', (a + b) / 2);
		mouse(c, 'mouseup', b);
	}

	/* the sites whose share chart c draws, with the most each had */
	function sharesOf(c) {
		return c.shares.map(function (s) {
			return data.names[s[0][s[1]]] + '=' +
				Math.max.apply(null, s[c.col]);
		}).join(' | ') + '; drawn ' +
			c.el.querySelectorAll('polygon.share').length;
	}

	/* where chart c draws the selection and the end it snapped to, in
	 * the plot's units, and whether the end is the checkpoint's */
	function snapped(c) {
		var x = parseFloat(c.sel.getAttribute('x'));
		var end = x + parseFloat(c.sel.getAttribute('width'));
		var at = parseFloat(c.snap.getAttribute('x1'));

		return 'selection ' + x.toFixed(1) + '..' + end.toFixed(1) +
			', snapped to ' + at.toFixed(1) + (c.snap.style.display ===
			'none' ? ' hidden' : '') + (at >= end - 0.05 &&
			at - end < c.cpStep / (c.span || 1) * c.plot[2] + 0.05 ?
			' (within a checkpoint after the end)' : ' (NOT the end\'s checkpoint)');
	}

	/* a mouse event at frac of chart c's plot's width */
	function mouse(c, type, frac) {
		var box = c.el.getBoundingClientRect();
		var x = (c.plot[0] + frac * c.plot[2]) * box.width / WIDTH;

		c.el.dispatchEvent(new MouseEvent(type, {
			bubbles: true, clientX: box.left + x,
			clientY: box.top + (c.plot[1] + 10) * box.height /
				parseFloat(c.el.getAttribute('height'))
		}));
	}

	/* the rows of table id the search marked, as a person sees them
	 * (the mark's colour), of all: "1 of 5: NAME" */
	function marked(id) {
		var mark = 'rgb(255, 187, 255)'; /* #fbf */
		var cells = $(id).querySelectorAll('td.site[data-frames]');
		var hit = Array.prototype.filter.call(cells, function (td) {
			return getComputedStyle(td).backgroundColor === mark;
		});

		return hit.length + ' of ' + cells.length + (hit.length ? ': ' +
			hit.map(function (td) {
				return (td.querySelector('.name') || td).textContent;
			}).join(' | ') : '');
	}

	function selftestViews(a, b) {
		var lines = [];
		var m, inv, th;

		for (inv = 0; inv < 2; inv++) {
			for (m = 0; m < LIVE; m++) {
				choose(view, 'flame');
				choose(invert, inv === 1);
				choose(metric, String(m));
				lines.push('flame ' + FIGURES[m].name +
					   (inv ? ' inverted' : '') + ': ' +
					   (root ? root.weight : 0) + ' ' +
					   FIGURES[m].unit + ', ' + frames.length +
					   ' frames; ' + flameTop());
			}
		}
		choose(invert, false);
		['top-down', 'bottom-up'].forEach(function (v) {
			choose(view, v);
			choose(metric, '0');
			lines.push(v + ' by allocated: ' + treeRows());
			for (m = 1; m < LIVE; m++) {
				th = $('tree').querySelector('th[data-m="' + m + '"]');
				th.dispatchEvent(new MouseEvent('click', { bubbles: true }));
				lines.push(v + ' sorted by ' + FIGURES[m].name + ': ' +
					   treeRows());
			}
			/* open the first closed row that has children */
			th = Array.prototype.filter.call(
				$('tree').querySelectorAll('tbody tr[data-id]'),
				function (tr) {
					var n = nodes[tr.dataset.id];

					return !n.open && n.kids.length;
				})[0];
			if (th) {
				th.querySelector('td').dispatchEvent(
					new MouseEvent('click', { bubbles: true }));
				lines.push(v + ' opened: ' + treeRows());
			}
		});
		choose(metric, '0');
		search.value = 'phase_';
		search.dispatchEvent(new Event('input'));
		lines.push('bottom-up search phase_: ' + match.textContent +
			   '; marked ' + $('tree').querySelectorAll('tr.hit').length);
		search.value = '';
		search.dispatchEvent(new Event('input'));
		choose(view, 'flame');
		choose(metric, '0');
		drag3(chartB, a, b);
		lines.push('shares: ' + sharesOf(chartB));
		lines.push('range: ' + $('range').textContent);
		lines.push('range: figure ' + metric.value + ', checkpoint ' +
			   chartB.k + ', ' + snapped(chartB));
		lines.push('live flame: ' + (root ? root.weight : 0) + ' bytes; ' +
			   flameTop());
		lines.push('live table: ' + Array.prototype.map.call(
			$('live').querySelectorAll('tbody tr'), function (tr) {
				var td = tr.querySelectorAll('td');

				return td.length > 2 ? td[1].textContent + '=' +
					td[2].textContent : td[0].textContent;
			}).join(' | '));
		lines.push('live head: ' + $('livehead').textContent);
		/* any case; a caller marks the sites under it */
		['phase_one', 'phase_two', 'MAIN', ''].forEach(function (t) {
			search.value = t;
			search.dispatchEvent(new Event('input'));
			lines.push('marked by "' + t + '": top sites ' +
				   marked('sites') + '; live ' + marked('live'));
		});
		choose(view, 'top-down');
		lines.push('top-down live: ' + treeRows());
		th = $('sites').querySelector('td.site');
		th.dispatchEvent(new MouseEvent('click', { bubbles: true }));
		lines.push('site stack: ' + $('sites').querySelector('tr.stack')
			   .textContent.split('\n').join(' | '));
		lines.push('site search: ' + search.value);
		th.dispatchEvent(new MouseEvent('click', { bubbles: true }));
		lines.push('site stack closed: ' +
			   $('sites').querySelectorAll('tr.stack').length);
		lines.push('ok');
		$('selftest').textContent += lines.join('\n') + '\n';
	}

	/* a diff's frames drawn just above the root: figure m in A -> in
	 * B, the change and the colour */
	function diffTop(m) {
		return frames.filter(function (f) {
			return f.parent === root;
		}).map(function (f) {
			return f.name + '=' + f.node.va[m] + '->' + f.node.v[m] +
				' ' + change(f.node, m) + ' ' +
				f.rect.getAttribute('fill');
		}).join(' | ');
	}

	/* report --diff: per figure, the inverted flame graph's allocating
	 * functions (A -> B, and the colour class) and the bottom-up tree;
	 * the charts; with '#diff=A,B[,C,D...]' ranges dragged from A to B
	 * on chart A, from C to D on chart B, and so on */
	function selftestDiff(range) {
		var lines = [], m;

		for (m = 0; m < LIVE; m++) {
			choose(view, 'flame');
			choose(invert, true);
			choose(metric, String(m));
			lines.push('diff inverted ' + FIGURES[m].name + ': ' +
				   diffTop(m));
		}
		choose(view, 'bottom-up');
		choose(metric, '0');
		lines.push('diff bottom-up: ' + treeRows());
		lines.push('diff cells: ' + Array.prototype.map.call(
			$('tree').querySelectorAll('tbody tr'), function (tr) {
				var td = tr.querySelectorAll('td');

				/* "... N more" is one cell */
				return td[td.length > 1 ? 1 : 0].textContent;
			}).join(' | '));
		search.value = 'phase_two';
		search.dispatchEvent(new Event('input'));
		lines.push('diff search phase_two: ' + match.textContent);
		search.value = '';
		search.dispatchEvent(new Event('input'));
		lines.push('diff charts: ' + charts.map(function (c) {
			return c.id + ' ' + c.el.querySelectorAll('polyline').length +
				' lines, shares ' + sharesOf(c);
		}).join('; '));
		for (m = 0; m + 1 < range.length; m += 2) {
			diffRange(lines, charts[m / 2 % charts.length],
				  range[m], range[m + 1]);
		}
		lines.push('ok');
		$('selftest').textContent += lines.join('\n') + '\n';
	}

	/* a range dragged on chart c of a diff: both charts' selections,
	 * the live figure's inverted flame graph (A -> B and the colour),
	 * the live sites' table and the bottom-up tree by it */
	function diffRange(lines, c, a, b) {
		var p = 'diff range on ' + c.id + ' ';

		choose(view, 'flame');
		choose(invert, true);
		drag3(c, a, b);
		lines.push(p + a + '..' + b + ': ' + $('range').textContent);
		lines.push(p + 'checkpoints: ' + charts.map(function (d) {
			return d.id + ' ' + d.k + ', ' + snapped(d);
		}).join('; '));
		lines.push(p + 'figure ' + metric.value + ', flame: ' +
			   diffTop(LIVE));
		lines.push(p + 'live table: ' + Array.prototype.map.call(
			$('live').querySelectorAll('tbody tr'), function (tr) {
				var td = tr.querySelectorAll('td');

				return td.length > 4 ? td[1].textContent + '=' +
					td[2].textContent + '->' + td[3].textContent +
					' ' + td[4].textContent + ' ' + td[4].className :
					td[0].textContent;
			}).join(' | '));
		lines.push(p + 'live head: ' + $('livehead').textContent);
		choose(view, 'bottom-up');
		lines.push(p + 'bottom-up: ' + treeRows());
		choose(view, 'flame');
		choose(invert, false);
	}

	if (location.hash.indexOf('#diff') === 0) {
		selftestDiff(location.hash.slice(6).split(',').filter(
			function (x) {
				return x !== '';
			}).map(parseFloat));
	} else if (location.hash.indexOf('#selftest=') === 0) {
		selftest.apply(null, location.hash.slice(10).split('&search=')
			       .map(decodeURIComponent));
	} else if (location.hash.indexOf('#views=') === 0) {
		selftestViews.apply(null, location.hash.slice(7).split(',')
				    .map(parseFloat));
	}
}());
