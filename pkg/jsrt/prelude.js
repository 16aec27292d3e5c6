// The prelude: evaluated once per run, before the program, as prelude.js.
// It is a single function expression taking the host's functions and returning
// the entry points the Go loop calls: start, resolve and fail. It leaves on
// globalThis only what a program is promised: tools, ALL_TOOLS, input,
// console, print, ToolRefused, ToolFailed.
//
// This file must not contain the three words that make the binding's Eval
// treat a source as a module (see prelude.go); a test checks it.
(function (host, limits, names, input) {
  'use strict';
  // Captured before the program runs: a program may replace globals, but not
  // the prelude's own copies of what its ending depends on.
  const AsyncFunction = (async function () {}).constructor;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const then = Promise.prototype.then;
  const String = globalThis.String;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const ownKeys = Reflect.ownKeys;
  const getDesc = Object.getOwnPropertyDescriptor;
  const getProto = Object.getPrototypeOf;
  const isArray = Array.isArray;
  const g = globalThis;

  // ---- errors a program can catch and test with instanceof ----

  class ToolRefused extends Error {
    constructor(message, code, server, tool, matches) {
      super(message);
      this.code = code;
      this.server = server;
      this.tool = tool;
      this.matches = freeze(matches || []);
      this.mayHaveRun = false;
    }
  }
  defineProperty(ToolRefused.prototype, 'name', { value: 'ToolRefused', writable: true, configurable: true });
  class ToolFailed extends Error {
    constructor(message, code, server, tool) {
      super(message);
      this.code = code;
      this.server = server;
      this.tool = tool;
      this.mayHaveRun = true;
    }
  }
  defineProperty(ToolFailed.prototype, 'name', { value: 'ToolFailed', writable: true, configurable: true });

  // ---- close matches for a misspelt name ----

  function distance(a, b) {
    if (a.length > 64 || b.length > 64) return 99;
    let prev = [];
    for (let j = 0; j <= b.length; j++) prev.push(j);
    for (let i = 1; i <= a.length; i++) {
      const cur = [i];
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        cur.push(Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost));
      }
      prev = cur;
    }
    return prev[b.length];
  }
  function closeMatches(name, candidates) {
    const lower = name.toLowerCase();
    const scored = [];
    for (const c of candidates) {
      const cl = c.toLowerCase();
      let d = distance(lower, cl);
      if (d > Math.max(2, Math.floor(name.length / 3)) && !(lower.length >= 3 && (cl.includes(lower) || lower.includes(cl)))) continue;
      scored.push([d, c]);
    }
    scored.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1));
    return scored.slice(0, 3).map((x) => x[1]);
  }
  function didYouMean(m) {
    return m.length ? ' (did you mean ' + m.join(', ') + '?)' : '';
  }

  // ---- calls: at most limits.maxInFlight in the parent, the rest wait here ----

  let nextId = 1;
  let inflight = 0;
  const pending = new Map();
  const waiting = [];
  let waitHead = 0;

  function dispatch(c) {
    const id = nextId++;
    const refusal = host.send(id, c.server, c.tool, c.json);
    if (refusal !== '') {
      const nl = refusal.indexOf('\n');
      c.reject(new ToolRefused(refusal.slice(nl + 1), refusal.slice(0, nl), c.server, c.tool));
      return;
    }
    inflight++;
    pending.set(id, c);
  }
  function pump() {
    while (inflight < limits.maxInFlight && waitHead < waiting.length) {
      const c = waiting[waitHead];
      waiting[waitHead++] = undefined;
      if (waitHead === waiting.length) { waiting.length = 0; waitHead = 0; }
      host.queued(waiting.length - waitHead);
      dispatch(c);
    }
  }
  function call(server, tool, args) {
    return new Promise((resolve, reject) => {
      const refuse = (code, why) => reject(new ToolRefused(
        'tools.' + server + '.' + tool + ': ' + why + '; nothing was sent', code, server, tool));
      if (args === undefined) args = {};
      if (args === null || typeof args !== 'object' || isArray(args)) {
        refuse('invalid_arguments', 'arguments must be an object, not ' + (args === null ? 'null' : isArray(args) ? 'an array' : typeof args));
        return;
      }
      let json;
      try {
        json = stringify(args);
      } catch (e) {
        refuse('invalid_arguments', 'arguments cannot be converted to JSON: ' + String(e && e.message || e));
        return;
      }
      if (typeof json !== 'string' || json[0] !== '{') {
        refuse('invalid_arguments', 'arguments must convert to a JSON object');
        return;
      }
      if (json.length > limits.maxArgBytes) {
        refuse('arguments_too_large', 'arguments are ' + json.length + ' characters of JSON, above the cap of ' + limits.maxArgBytes + ' bytes');
        return;
      }
      const c = { server, tool, json, resolve, reject };
      if (inflight < limits.maxInFlight) {
        dispatch(c);
      } else {
        waiting.push(c);
        host.queued(waiting.length - waitHead);
      }
    });
  }
  function take(id) {
    const c = pending.get(id);
    if (c === undefined) return undefined;
    pending.delete(id);
    inflight--;
    return c;
  }
  // resolve hands a call its answer; fail hands it a refusal or a failure.
  function resolve(id, value) {
    const c = take(id);
    if (c === undefined) return;
    c.resolve(value);
    pump();
  }
  function fail(id, outcome, code, message, matches) {
    const c = take(id);
    if (c === undefined) return;
    if (outcome === 'refused') {
      c.reject(new ToolRefused(message, code, c.server, c.tool, matches === '' ? [] : parse(matches)));
    } else {
      c.reject(new ToolFailed(message, code, c.server, c.tool));
    }
    pump();
  }

  // ---- tools: tools.server.tool(args), unknown names refused at once ----

  function refuseName(code, message, server, tool, matches) {
    throw new ToolRefused(message + didYouMean(matches) + '; nothing was sent', code, server, tool, matches);
  }
  function passThrough(key) {
    return typeof key !== 'string' || key === 'then' || key === 'toJSON';
  }
  const serverNames = ownKeys(names);
  const servers = Object.create(null);
  for (const server of serverNames) {
    const toolNames = names[server];
    const fns = Object.create(null);
    for (const tool of toolNames) {
      const fn = (args) => call(server, tool, args);
      defineProperty(fn, 'name', { value: tool });
      fns[tool] = fn;
    }
    freeze(fns);
    servers[server] = new Proxy(fns, {
      get(t, key) {
        if (key in t || passThrough(key)) return t[key];
        refuseName('unknown_tool', 'tools.' + server + '.' + key + ': server "' + server + '" has no tool "' + key + '"',
          server, key, closeMatches(key, toolNames));
      },
      set() { return false; },
    });
  }
  freeze(servers);
  const tools = new Proxy(servers, {
    get(t, key) {
      if (key in t || passThrough(key)) return t[key];
      refuseName('unknown_server', 'tools.' + key + ': there is no server "' + key + '"' +
        (serverNames.length ? '' : ' (this run has no tools)'), key, '', closeMatches(key, serverNames));
    },
    set() { return false; },
  });

  // ---- console: formats values readably, never runs a getter ----

  function quote(s) {
    return "'" + s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n') + "'";
  }
  function keyText(k) {
    if (typeof k === 'symbol') return '[' + String(k) + ']';
    return /^[A-Za-z_$][\w$]*$/.test(k) ? k : quote(k);
  }
  function errorText(e) {
    let s;
    try { s = e.stack; } catch (_) { s = undefined; }
    let head;
    try { head = String(e.name) + ': ' + String(e.message); } catch (_) { head = 'Error'; }
    s = typeof s === 'string' ? host.stack(s) : '';
    return s ? head + '\n' + s : head;
  }
  const MAX_ITEMS = 100;
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case 'string': return depth === 0 ? v : quote(v);
      case 'number': return Object.is(v, -0) ? '-0' : String(v);
      case 'bigint': return String(v) + 'n';
      case 'undefined': return 'undefined';
      case 'boolean': return String(v);
      case 'symbol': return String(v);
      case 'function': return '[Function: ' + (v.name || '(anonymous)') + ']';
    }
    if (v === null) return 'null';
    if (seen.includes(v)) return '[Circular]';
    if (v instanceof Error) return errorText(v);
    if (v instanceof Date) return isNaN(v) ? 'Invalid Date' : v.toISOString();
    if (v instanceof RegExp) return String(v);
    if (v instanceof Promise) return 'Promise {}';
    if (depth > 3) return isArray(v) ? '[Array]' : '[Object]';
    seen.push(v);
    try {
      const parts = [];
      let more = 0;
      const full = () => parts.length >= MAX_ITEMS;
      let open = '{', close = '}', prefix = '';
      if (isArray(v)) {
        open = '['; close = ']';
        for (let i = 0; i < v.length; i++) {
          if (parts.length >= MAX_ITEMS) { more = v.length - i; break; }
          const d = getDesc(v, i);
          parts.push(d === undefined ? '<empty>' : 'value' in d ? inspect(d.value, depth + 1, seen) : '[Getter]');
        }
      } else if (v instanceof Map) {
        prefix = 'Map(' + v.size + ') ';
        for (const [k, x] of v) {
          if (full()) { more = v.size - parts.length; break; }
          parts.push(inspect(k, depth + 1, seen) + ' => ' + inspect(x, depth + 1, seen));
        }
      } else if (v instanceof Set) {
        prefix = 'Set(' + v.size + ') ';
        for (const x of v) {
          if (full()) { more = v.size - parts.length; break; }
          parts.push(inspect(x, depth + 1, seen));
        }
      } else {
        const proto = getProto(v);
        const ctor = proto && getDesc(proto, 'constructor');
        const cname = ctor && typeof ctor.value === 'function' ? ctor.value.name : '';
        if (proto === null) prefix = '[Object: null prototype] ';
        else if (cname && cname !== 'Object') prefix = cname + ' ';
      }
      if (!isArray(v)) {
        for (const k of ownKeys(v)) {
          const d = getDesc(v, k);
          if (d === undefined || !d.enumerable) continue;
          if (full()) { more++; continue; }
          parts.push(keyText(k) + ': ' + ('value' in d ? inspect(d.value, depth + 1, seen) : d.set ? '[Getter/Setter]' : '[Getter]'));
        }
      }
      if (more > 0) parts.push('... ' + more + ' more item' + (more === 1 ? '' : 's'));
      if (parts.length === 0) return prefix + open + close;
      return prefix + open + ' ' + parts.join(', ') + ' ' + close;
    } finally {
      seen.pop();
    }
  }
  const PIECE = limits.outputHead + limits.outputTail;
  function write(prefix, args) {
    let s = prefix;
    for (let i = 0; i < args.length; i++) {
      if (i > 0) s += ' ';
      s += inspect(args[i], 0, []);
    }
    s += '\n';
    if (s.length <= PIECE) {
      host.emit(s, 0);
    } else {
      host.emit(s.slice(0, limits.outputHead), 0);
      host.emit(s.slice(s.length - limits.outputTail), s.length - PIECE);
    }
  }
  const console = freeze({
    log(...a) { write('', a); },
    info(...a) { write('', a); },
    debug(...a) { write('', a); },
    warn(...a) { write('[warn] ', a); },
    error(...a) { write('[error] ', a); },
  });

  // ---- the globals a program is promised ----

  const fixed = (value) => ({ value, writable: false, enumerable: false, configurable: false });
  defineProperty(g, 'tools', fixed(tools));
  defineProperty(g, 'input', { value: input, writable: true, enumerable: false, configurable: false });
  defineProperty(g, 'console', fixed(console));
  defineProperty(g, 'print', fixed(function print(...a) { write('', a); }));
  defineProperty(g, 'ToolRefused', fixed(ToolRefused));
  defineProperty(g, 'ToolFailed', fixed(ToolFailed));
  function deepFreeze(v) {
    if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
      freeze(v);
      for (const k of ownKeys(v)) deepFreeze(v[k]);
    }
    return v;
  }
  defineProperty(g, 'ALL_TOOLS', {
    configurable: true,
    enumerable: false,
    get() {
      const all = deepFreeze(parse(host.catalog()));
      defineProperty(g, 'ALL_TOOLS', fixed(all));
      return all;
    },
  });

  // ---- the ending ----

  function describe(e) {
    if (e instanceof Error) {
      let name = 'Error', message = '', stack = '';
      try { name = String(e.name); } catch (_) { /* keep the default */ }
      try { message = String(e.message); } catch (_) { /* keep the default */ }
      try { stack = typeof e.stack === 'string' ? host.stack(e.stack) : ''; } catch (_) { /* keep the default */ }
      host.finish('threw', name, message, stack, 0);
      return;
    }
    if (e === null) {
      host.finish('threw', 'NonError', 'the program threw null', '', 1);
      return;
    }
    let text;
    try { text = typeof e === 'string' ? quote(e) : inspect(e, 1, []); } catch (_) { text = typeof e; }
    host.finish('threw', 'NonError', 'the program threw a non-Error value: ' + text, '', 0);
  }
  function onReturn(v) {
    let json;
    try {
      json = stringify(v);
      if (json === undefined) {
        json = v === undefined ? 'null' : stringify('[the returned value is a ' + typeof v + ', which JSON cannot hold]');
      }
    } catch (e) {
      let why;
      try { why = String(e && e.message || e); } catch (_) { why = 'unknown error'; }
      json = stringify('[the returned value could not be converted to JSON: ' + why + ']');
    }
    host.finish('returned', json, '', '', 0);
  }
  function onThrow(e) {
    describe(e);
  }

  function start(code) {
    let p;
    try {
      p = new AsyncFunction(code)();
    } catch (e) {
      p = Promise.reject(e);
    }
    then.call(p, onReturn, onThrow);
    return p;
  }

  return { start, resolve, fail };
})
