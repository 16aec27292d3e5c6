// The prelude: evaluated once per run, before the program, as prelude.js.
// It is a single function expression taking the host's functions and returning
// the entry points the Go loop calls: start, resolve, fail and explain, and
// the object out, where output waits for the host (see "output" below). It leaves
// on globalThis only what a program is promised: tools, ALL_TOOLS, input,
// console, print, ToolRefused, ToolFailed.
//
// This file must not contain the three words that make the binding's Eval
// treat a source as a module (see prelude.go); a test checks it.
//
// Primordials. The program shares this realm: it can replace or delete any
// method of any intrinsic, turn a data property into a getter, give Array.prototype
// an indexed setter, or define Symbol.hasInstance on Error, before or while it
// calls tools. So everything the prelude calls after the program starts is
// captured here, while the prelude runs and before the program does, and it is
// called without looking anything up on an object the program can reach:
//   - methods are uncurried from their intrinsic (uncurryThis(fn)(self, ...args)
//     runs fn with no lookup); getters are taken from their descriptors;
//   - the prelude's own records are null-prototype objects created by literals,
//     and property descriptors have no prototype, so neither a setter nor an
//     inherited get/set on Object.prototype can intervene;
//   - no for-of, spread, array destructuring, instanceof, String(object),
//     regexps, Array.prototype or Function.prototype methods; arrays the prelude
//     builds are literals or typed arrays; lists are linked records;
//   - the ending never goes through a promise's species: the program's promise
//     gets an own constructor of undefined before then is applied to it (the
//     program never holds that promise);
//   - values of the program are read as data: no getter of theirs runs (a Proxy's
//     traps do: that is the program's code acting on its own value).
// A program's own toJSON methods and Error.prepareStackTrace are part of its
// values and do run, as in any JavaScript engine.
(function (host, limits, input) {
  'use strict';

  // ---- primordials ----

  const uncurryThis = Function.prototype.bind.bind(Function.prototype.call);
  const AsyncFunction = (async function () {}).constructor;
  const PromiseCtor = Promise;
  const PromisePrototype = Promise.prototype;
  const PromisePrototypeThen = uncurryThis(Promise.prototype.then);
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const MapPrototypeGet = uncurryThis(Map.prototype.get);
  const MapPrototypeSet = uncurryThis(Map.prototype.set);
  const MapPrototypeDelete = uncurryThis(Map.prototype.delete);
  const MapPrototypeEntries = uncurryThis(Map.prototype.entries);
  const MapIteratorNext = uncurryThis(Reflect.getPrototypeOf(new Map().entries()).next);
  const SetPrototypeValues = uncurryThis(Set.prototype.values);
  const SetIteratorNext = uncurryThis(Reflect.getPrototypeOf(new Set().values()).next);
  const Int32ArrayCtor = Int32Array;
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const StringCtor = String;
  const StringPrototypeSlice = uncurryThis(String.prototype.slice);
  const StringPrototypeIndexOf = uncurryThis(String.prototype.indexOf);
  const StringPrototypeCharCodeAt = uncurryThis(String.prototype.charCodeAt);
  const StringPrototypeToLowerCase = uncurryThis(String.prototype.toLowerCase);
  const StringPrototypeIncludes = uncurryThis(String.prototype.includes);
  const MathMin = Math.min;
  const MathMax = Math.max;
  const MathFloor = Math.floor;
  const DateNow = Date.now;
  const DatePrototypeGetTime = uncurryThis(Date.prototype.getTime);
  const DatePrototypeToISOString = uncurryThis(Date.prototype.toISOString);
  const ObjectFreeze = Object.freeze;
  const ObjectIsFrozen = Object.isFrozen;
  const ObjectIs = Object.is;
  const ObjectHasOwn = Object.hasOwn;
  const ArrayIsArray = Array.isArray;
  const ReflectConstruct = Reflect.construct;
  const ReflectDefineProperty = Reflect.defineProperty;
  const ReflectGetPrototypeOf = Reflect.getPrototypeOf;
  const ReflectGetOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
  const ReflectOwnKeys = Reflect.ownKeys;
  const getterOf = (o, k) => ReflectGetOwnPropertyDescriptor(o, k).get;
  const MapPrototypeSize = uncurryThis(getterOf(Map.prototype, 'size'));
  const SetPrototypeSize = uncurryThis(getterOf(Set.prototype, 'size'));
  const RegExpPrototype = RegExp.prototype;
  const RegExpPrototypeSource = uncurryThis(getterOf(RegExp.prototype, 'source'));
  // The flags in the order RegExp.prototype.flags lists them.
  const regExpFlags = [];
  {
    const order = ['hasIndices', 'd', 'global', 'g', 'ignoreCase', 'i', 'multiline', 'm', 'dotAll', 's',
      'unicode', 'u', 'unicodeSets', 'v', 'sticky', 'y'];
    for (let i = 0; i < order.length; i += 2) {
      const d = ReflectGetOwnPropertyDescriptor(RegExp.prototype, order[i]);
      if (d !== undefined && typeof d.get === 'function') {
        regExpFlags[regExpFlags.length] = uncurryThis(d.get);
        regExpFlags[regExpFlags.length] = order[i + 1];
      }
    }
  }
  const ErrorCtor = Error;
  const ErrorPrototype = Error.prototype;

  // The host's functions and the run's limits, read once.
  const hostSend = host.send;
  const hostQueued = host.queued;
  const hostEmit = host.emit;
  const hostStack = host.stack;
  const hostCatalog = host.catalog;
  const hostFinish = host.finish;
  const maxInFlight = limits.maxInFlight;
  const maxArgBytes = limits.maxArgBytes;
  const outputHead = limits.outputHead;
  const outputTail = limits.outputTail;
  const g = globalThis;

  // desc builds a property descriptor no prototype can add to.
  function desc(value, writable, enumerable, configurable) {
    return { __proto__: null, value, writable, enumerable, configurable };
  }
  function isPrimitive(v) {
    return v === null || (typeof v !== 'object' && typeof v !== 'function');
  }
  // ownData is an own data property's value, or undefined (a getter is not run).
  function ownData(o, key) {
    const d = ReflectGetOwnPropertyDescriptor(o, key);
    return d !== undefined && ObjectHasOwn(d, 'value') ? d.value : undefined;
  }
  // inherits is instanceof without Symbol.hasInstance: proto is on v's chain.
  function inherits(v, proto) {
    if (isPrimitive(v)) return false;
    try {
      for (let o = ReflectGetPrototypeOf(v), i = 0; o !== null && i < 10000; o = ReflectGetPrototypeOf(o), i++) {
        if (o === proto) return true;
      }
    } catch (_) { /* a Proxy's trap threw: not one */ }
    return false;
  }

  // ---- errors a program can catch and test with instanceof ----

  class ToolRefused extends Error {
    constructor(message, code, server, tool, matches) {
      super(message);
      this.code = code;
      this.server = server;
      this.tool = tool;
      this.matches = ObjectFreeze(matches || []);
      this.mayHaveRun = false;
    }
  }
  ReflectDefineProperty(ToolRefused.prototype, 'name', desc('ToolRefused', true, false, true));
  class ToolFailed extends Error {
    constructor(message, code, server, tool) {
      super(message);
      this.code = code;
      this.server = server;
      this.tool = tool;
      this.mayHaveRun = true;
    }
  }
  ReflectDefineProperty(ToolFailed.prototype, 'name', desc('ToolFailed', true, false, true));

  // The names of the intrinsic error prototypes, as they were before the
  // program ran: an error's name is read from its own data, else from the
  // nearest prototype, and an intrinsic prototype answers with its original.
  const intrinsicNames = new MapCtor();
  {
    const ctors = [Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError,
      g.InternalError, g.AggregateError, g.SuppressedError, ToolRefused, ToolFailed];
    for (let i = 0; i < ctors.length; i++) {
      if (typeof ctors[i] === 'function') MapPrototypeSet(intrinsicNames, ctors[i].prototype, ctors[i].prototype.name);
    }
  }
  // The constructor names of intrinsic prototypes, for console's prefix.
  const intrinsicCtorNames = new MapCtor();
  {
    const ctors = [Object, Array, Map, Set, Date, RegExp, Promise, Function, WeakMap, WeakSet, ArrayBuffer, DataView,
      Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array,
      BigInt64Array, BigUint64Array, Boolean, Number, String, Symbol, BigInt];
    for (let i = 0; i < ctors.length; i++) {
      if (typeof ctors[i] === 'function') MapPrototypeSet(intrinsicCtorNames, ctors[i].prototype, ctors[i].name);
    }
  }
  const InternalErrorPrototype = typeof g.InternalError === 'function' ? g.InternalError.prototype : null;

  // newError makes a ToolRefused or ToolFailed as its class would, without
  // running the class's chain: the program may have changed the class's
  // prototype, but not ToolRefused.prototype (non-writable, non-configurable).
  function newError(Ctor, message, code, server, tool) {
    const e = ReflectConstruct(ErrorCtor, [message], Ctor);
    ReflectDefineProperty(e, 'code', desc(code, true, true, true));
    ReflectDefineProperty(e, 'server', desc(server, true, true, true));
    ReflectDefineProperty(e, 'tool', desc(tool, true, true, true));
    return e;
  }
  function newRefused(message, code, server, tool, matches) {
    const e = newError(ToolRefused, message, code, server, tool);
    ReflectDefineProperty(e, 'matches', desc(ObjectFreeze(matches), true, true, true));
    ReflectDefineProperty(e, 'mayHaveRun', desc(false, true, true, true));
    return e;
  }
  function newFailed(message, code, server, tool) {
    const e = newError(ToolFailed, message, code, server, tool);
    ReflectDefineProperty(e, 'mayHaveRun', desc(true, true, true, true));
    return e;
  }

  // ---- close matches for a misspelt name ----

  function distance(a, b) {
    if (a.length > 64 || b.length > 64) return 99;
    let prev = new Int32ArrayCtor(b.length + 1);
    let cur = new Int32ArrayCtor(b.length + 1);
    for (let j = 0; j <= b.length; j++) prev[j] = j;
    for (let i = 1; i <= a.length; i++) {
      cur[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const cost = StringPrototypeCharCodeAt(a, i - 1) === StringPrototypeCharCodeAt(b, j - 1) ? 0 : 1;
        cur[j] = MathMin(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      }
      const t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length];
  }
  // closeMatches returns up to three candidates, closest first, ties by name.
  function closeMatches(name, candidates) {
    const lower = StringPrototypeToLowerCase(name);
    let n = 0, d0 = 0, d1 = 0, d2 = 0, c0 = '', c1 = '', c2 = '';
    for (let k = 0; k < candidates.length; k++) {
      const c = candidates[k];
      const cl = StringPrototypeToLowerCase(c);
      const d = distance(lower, cl);
      if (d > MathMax(2, MathFloor(name.length / 3)) &&
        !(lower.length >= 3 && (StringPrototypeIncludes(cl, lower) || StringPrototypeIncludes(lower, cl)))) continue;
      const before = (dx, cx) => d < dx || (d === dx && c < cx);
      const had = n;
      if (n < 3) n++;
      if (had === 0 || before(d0, c0)) {
        d2 = d1; c2 = c1; d1 = d0; c1 = c0; d0 = d; c0 = c;
      } else if (had === 1 || before(d1, c1)) {
        d2 = d1; c2 = c1; d1 = d; c1 = c;
      } else if (had === 2 || before(d2, c2)) {
        d2 = d; c2 = c;
      }
    }
    return n === 0 ? [] : n === 1 ? [c0] : n === 2 ? [c0, c1] : [c0, c1, c2];
  }
  function didYouMean(m) {
    if (m.length === 0) return '';
    let s = ' (did you mean ' + m[0];
    for (let i = 1; i < m.length; i++) s += ', ' + m[i];
    return s + '?)';
  }

  // ---- calls: at most maxInFlight in the parent, the rest wait here ----
  //
  // The host owns call ids: host.send returns the id of a call it sent, or a
  // refusal ("code\nmessage") for one it did not send, which takes no id.

  let inflight = 0;
  let lastId = 0; // the host's last id: ids are 1, 2, 3, ... per call sent
  const pending = new MapCtor(); // id -> call record
  let waitHead = null, waitTail = null, waitCount = 0; // calls not yet sent, oldest first

  // dispatch sends c, or has it refused. fromQueue says c came off the
  // waiting list: the host then counts it out of the calls waiting, with the
  // send itself, so that its count never misses or doubles a call whatever
  // fails around it. The call's record is made before it is sent, so that
  // running out of memory cannot lose a call the parent has.
  function dispatch(c, fromQueue) {
    flushOutput(); // output written before a call reaches the parent before it
    const id = lastId + 1;
    MapPrototypeSet(pending, id, c);
    const r = hostSend(c.server, c.tool, c.json, fromQueue);
    if (typeof r === 'string') {
      MapPrototypeDelete(pending, id);
      const nl = StringPrototypeIndexOf(r, '\n');
      c.reject(newRefused(StringPrototypeSlice(r, nl + 1), StringPrototypeSlice(r, 0, nl), c.server, c.tool, []));
      return;
    }
    lastId = r; // == id
    inflight++;
  }
  function pump() {
    while (inflight < maxInFlight && waitHead !== null) {
      const c = waitHead;
      waitHead = c.next;
      if (waitHead === null) waitTail = null;
      c.next = null;
      waitCount--;
      dispatch(c, 1);
    }
  }
  function call(server, tool, args) {
    return new PromiseCtor((resolve, reject) => {
      const refuse = (code, why) => reject(newRefused(
        'tools.' + server + '.' + tool + ': ' + why + '; nothing was sent', code, server, tool, []));
      if (args === undefined) args = {};
      if (args === null || typeof args !== 'object' || ArrayIsArray(args)) {
        refuse('invalid_arguments', 'arguments must be an object, not ' + (args === null ? 'null' : ArrayIsArray(args) ? 'an array' : typeof args));
        return;
      }
      let json;
      try {
        json = JSONStringify(args);
      } catch (e) {
        refuse('invalid_arguments', 'arguments cannot be converted to JSON: ' + messageOf(e));
        return;
      }
      if (typeof json !== 'string' || StringPrototypeCharCodeAt(json, 0) !== 123 /* { */) {
        refuse('invalid_arguments', 'arguments must convert to a JSON object');
        return;
      }
      // Characters never outnumber UTF-8 bytes; the host checks the bytes.
      if (json.length > maxArgBytes) {
        refuse('arguments_too_large', 'arguments are ' + json.length + ' characters of JSON, above the cap of ' + maxArgBytes + ' bytes');
        return;
      }
      const c = { __proto__: null, server, tool, json, resolve, reject, next: null };
      if (inflight < maxInFlight) {
        dispatch(c, 0);
      } else {
        if (waitTail === null) waitHead = c; else waitTail.next = c;
        waitTail = c;
        waitCount++;
        hostQueued(waitCount);
      }
    });
  }
  function take(id) {
    const c = MapPrototypeGet(pending, id);
    if (c === undefined) return undefined;
    MapPrototypeDelete(pending, id);
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
      let m = [];
      if (matches !== '') {
        try { m = JSONParse(matches); } catch (_) { /* keep none */ }
      }
      c.reject(newRefused(message, code, c.server, c.tool, m));
    } else {
      c.reject(newFailed(message, code, c.server, c.tool));
    }
    pump();
  }

  // ---- tools: tools.server.tool(args), resolved when reached ----
  //
  // The catalog stays in the host until the program reaches for a name:
  // host.lookup(server, tool) says 2 (the tool exists), 1 (the server
  // exists), 0 (no such server), or "state\nreason" for a configured server
  // that is not ready; host.servers() and host.tools(server) list names, as
  // JSON. A run whose program never touches tools pays nothing for the
  // catalog's size. A server's object and a tool's function are made the
  // first time they are reached and kept, so each is always the same value.
  // tools and the server objects are proxies that cannot be written,
  // extended or frozen; unknown names are refused at once.

  function refuseName(code, message, server, tool, matches) {
    throw newRefused(message + didYouMean(matches) + '; nothing was sent', code, server, tool, matches);
  }
  function passThrough(key) {
    return typeof key !== 'string' || key === 'then' || key === 'toJSON';
  }
  const hostLookup = host.lookup;
  const hostServers = host.servers;
  const hostTools = host.tools;
  // The traps that keep a proxy read-only (its target stays empty and
  // extensible, so that it may report the names the host holds).
  function refuse() { return false; }
  const serverObjects = new MapCtor(); // server -> its proxy
  function serverObject(server) {
    let p = MapPrototypeGet(serverObjects, server);
    if (p !== undefined) return p;
    const fns = new MapCtor(); // tool -> its function
    const toolFn = (tool) => {
      let fn = MapPrototypeGet(fns, tool);
      if (fn === undefined) {
        fn = (args) => call(server, tool, args);
        ReflectDefineProperty(fn, 'name', desc(tool, false, false, true));
        MapPrototypeSet(fns, tool, fn);
      }
      return fn;
    };
    const known = (key) => typeof key === 'string' &&
      (MapPrototypeGet(fns, key) !== undefined || hostLookup(server, key) === 2);
    p = new ProxyCtor({ __proto__: null }, {
      __proto__: null,
      get(t, key) {
        if (known(key)) return toolFn(key);
        if (passThrough(key)) return undefined;
        refuseName('unknown_tool', 'tools.' + server + '.' + key + ': server "' + server + '" has no tool "' + key + '"',
          server, key, closeMatches(key, JSONParse(hostTools(server))));
      },
      has(t, key) { return known(key); },
      ownKeys() { return JSONParse(hostTools(server)); },
      getOwnPropertyDescriptor(t, key) {
        return known(key) ? desc(toolFn(key), false, true, true) : undefined;
      },
      getPrototypeOf() { return null; },
      set: refuse, defineProperty: refuse, deleteProperty: refuse, preventExtensions: refuse, setPrototypeOf: refuse,
    });
    MapPrototypeSet(serverObjects, server, p);
    return p;
  }
  function isServer(key) {
    if (typeof key !== 'string') return false;
    if (MapPrototypeGet(serverObjects, key) !== undefined) return true;
    const r = hostLookup(key, '');
    return r === 1 || r === 2;
  }
  const tools = new ProxyCtor({ __proto__: null }, {
    __proto__: null,
    get(t, key) {
      if (isServer(key)) return serverObject(key);
      if (passThrough(key)) return undefined;
      const r = hostLookup(key, '');
      if (typeof r === 'string') {
        const nl = StringPrototypeIndexOf(r, '\n');
        refuseName('server_unavailable', 'tools.' + key + ': server "' + key + '" is ' + StringPrototypeSlice(r, 0, nl) +
          ': ' + StringPrototypeSlice(r, nl + 1), key, '', []);
      }
      const serverNames = JSONParse(hostServers());
      refuseName('unknown_server', 'tools.' + key + ': there is no server "' + key + '"' +
        (serverNames.length ? '' : ' (this run has no tools)'), key, '', closeMatches(key, serverNames));
    },
    has(t, key) { return isServer(key); },
    ownKeys() { return JSONParse(hostServers()); },
    getOwnPropertyDescriptor(t, key) {
      return isServer(key) ? desc(serverObject(key), false, true, true) : undefined;
    },
    getPrototypeOf() { return null; },
    set: refuse, defineProperty: refuse, deleteProperty: refuse, preventExtensions: refuse, setPrototypeOf: refuse,
  });

  // ---- reading a program's values as data ----

  // messageOf explains a thrown value in a sentence: a primitive as String
  // gives it, an object by its own message.
  function messageOf(e) {
    if (isPrimitive(e)) return typeof e === 'symbol' ? 'a symbol' : StringCtor(e);
    try {
      const m = ownData(e, 'message');
      if (isPrimitive(m) && m !== undefined && typeof m !== 'symbol') return StringCtor(m);
    } catch (_) { /* a Proxy's trap threw */ }
    return 'an object';
  }
  // errorName and errorMessage read an error's name and message as data: its
  // own, else the nearest prototype's, where an intrinsic error prototype
  // answers with its original name and an empty message.
  function errorField(e, key) {
    try {
      for (let o = e, i = 0; o !== null && i < 10000; o = ReflectGetPrototypeOf(o), i++) {
        const known = MapPrototypeGet(intrinsicNames, o);
        if (known !== undefined) return key === 'name' ? known : '';
        const v = ownData(o, key);
        if (v !== undefined && isPrimitive(v) && typeof v !== 'symbol') return StringCtor(v);
      }
    } catch (_) { /* a Proxy's trap threw */ }
    return key === 'name' ? 'Error' : '';
  }
  function errorStack(e) {
    try {
      const s = ownData(e, 'stack');
      return typeof s === 'string' ? hostStack(s) : '';
    } catch (_) {
      return '';
    }
  }
  function isOutOfMemory(e) {
    return e === null || (InternalErrorPrototype !== null && inherits(e, InternalErrorPrototype) &&
      errorField(e, 'message') === 'out of memory');
  }
  function fnName(f) {
    try {
      const n = ownData(f, 'name');
      return typeof n === 'string' ? n : '';
    } catch (_) {
      return '';
    }
  }
  function isDate(v) {
    try { DatePrototypeGetTime(v); return true; } catch (_) { return false; }
  }
  function isRegExp(v) {
    if (v === RegExpPrototype) return false;
    try { RegExpPrototypeSource(v); return true; } catch (_) { return false; }
  }
  function isMap(v) {
    try { MapPrototypeSize(v); return true; } catch (_) { return false; }
  }
  function isSet(v) {
    try { SetPrototypeSize(v); return true; } catch (_) { return false; }
  }
  function regExpText(v) {
    let flags = '';
    for (let i = 0; i < regExpFlags.length; i += 2) {
      if (regExpFlags[i](v)) flags += regExpFlags[i + 1];
    }
    return '/' + RegExpPrototypeSource(v) + '/' + flags;
  }

  // ---- console: formats values readably, never runs a getter ----

  function quote(s) {
    if (StringPrototypeIndexOf(s, '\\') < 0 && StringPrototypeIndexOf(s, "'") < 0 && StringPrototypeIndexOf(s, '\n') < 0) {
      return "'" + s + "'";
    }
    let out = "'", from = 0;
    for (let i = 0; i < s.length; i++) {
      const c = StringPrototypeCharCodeAt(s, i);
      if (c === 92 || c === 39 || c === 10) {
        out += StringPrototypeSlice(s, from, i) + (c === 92 ? '\\\\' : c === 39 ? "\\'" : '\\n');
        from = i + 1;
      }
    }
    return out + StringPrototypeSlice(s, from) + "'";
  }
  function isIdentifier(k) {
    if (k.length === 0) return false;
    for (let i = 0; i < k.length; i++) {
      const c = StringPrototypeCharCodeAt(k, i);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 36;
      if (!letter && !(i > 0 && c >= 48 && c <= 57)) return false;
    }
    return true;
  }
  function keyText(k) {
    if (typeof k === 'symbol') return '[' + StringCtor(k) + ']';
    return isIdentifier(k) ? k : quote(k);
  }
  function errorText(e) {
    const head = errorField(e, 'name') + ': ' + errorField(e, 'message');
    const s = errorStack(e);
    return s ? head + '\n' + s : head;
  }
  function isSeen(seen, v) {
    for (let s = seen; s !== null; s = s.up) {
      if (s.v === v) return true;
    }
    return false;
  }
  const MAX_ITEMS = 100;
  function inspect(v, depth, seen) {
    switch (typeof v) {
      case 'string': return depth === 0 ? v : quote(v);
      case 'number': return ObjectIs(v, -0) ? '-0' : StringCtor(v);
      case 'bigint': return StringCtor(v) + 'n';
      case 'undefined': return 'undefined';
      case 'boolean': return v ? 'true' : 'false';
      case 'symbol': return StringCtor(v);
      case 'function': return '[Function: ' + (fnName(v) || '(anonymous)') + ']';
    }
    if (v === null) return 'null';
    if (isSeen(seen, v)) return '[Circular]';
    if (inherits(v, ErrorPrototype)) return errorText(v);
    if (isDate(v)) {
      const t = DatePrototypeGetTime(v);
      return t !== t ? 'Invalid Date' : DatePrototypeToISOString(v);
    }
    if (isRegExp(v)) return regExpText(v);
    if (inherits(v, PromisePrototype)) return 'Promise {}';
    const array = ArrayIsArray(v);
    if (depth > 3) return array ? '[Array]' : '[Object]';
    const inner = { __proto__: null, v, up: seen };
    let body = '', count = 0, more = 0;
    const add = (part) => {
      body += (count === 0 ? '' : ', ') + part;
      count++;
    };
    let open = '{', close = '}', prefix = '';
    if (array) {
      open = '[';
      close = ']';
      const length = v.length;
      for (let i = 0; i < length; i++) {
        if (count >= MAX_ITEMS) { more = length - i; break; }
        const d = ReflectGetOwnPropertyDescriptor(v, i);
        add(d === undefined ? '<empty>' : ObjectHasOwn(d, 'value') ? inspect(d.value, depth + 1, inner) : '[Getter]');
      }
    } else if (isMap(v)) {
      const size = MapPrototypeSize(v);
      prefix = 'Map(' + size + ') ';
      const it = MapPrototypeEntries(v);
      for (;;) {
        const r = MapIteratorNext(it);
        if (r.done) break;
        if (count >= MAX_ITEMS) { more = size - count; break; }
        add(inspect(r.value[0], depth + 1, inner) + ' => ' + inspect(r.value[1], depth + 1, inner));
      }
    } else if (isSet(v)) {
      const size = SetPrototypeSize(v);
      prefix = 'Set(' + size + ') ';
      const it = SetPrototypeValues(v);
      for (;;) {
        const r = SetIteratorNext(it);
        if (r.done) break;
        if (count >= MAX_ITEMS) { more = size - count; break; }
        add(inspect(r.value, depth + 1, inner));
      }
    } else {
      const proto = ReflectGetPrototypeOf(v);
      let cname = MapPrototypeGet(intrinsicCtorNames, proto);
      if (cname === undefined) {
        const ctor = proto === null ? undefined : ownData(proto, 'constructor');
        cname = typeof ctor === 'function' ? fnName(ctor) : '';
      }
      if (proto === null) prefix = '[Object: null prototype] ';
      else if (cname && cname !== 'Object') prefix = cname + ' ';
    }
    if (!array) {
      const keys = ReflectOwnKeys(v);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        const d = ReflectGetOwnPropertyDescriptor(v, k);
        if (d === undefined || !d.enumerable) continue;
        if (count >= MAX_ITEMS) { more++; continue; }
        add(keyText(k) + ': ' + (ObjectHasOwn(d, 'value') ? inspect(d.value, depth + 1, inner) : d.set ? '[Getter/Setter]' : '[Getter]'));
      }
    }
    if (more > 0) add('... ' + more + ' more item' + (more === 1 ? '' : 's'));
    if (count === 0) return prefix + open + close;
    return prefix + open + ' ' + body + ' ' + close;
  }

  // ---- output ----
  //
  // The parent keeps the first outputHead characters of a run's output, the
  // last outputTail, and the count of the rest. Until the head is full, text
  // goes to the host at once. After that only a tail and a count are needed:
  // text waits in out.text, which is cut to its last KEEP characters (the
  // count of what was cut adds up in out.skip) whenever it grows past CAP. It
  // goes to the host, as out.skip then out.text, when the program makes a
  // call, at least every FLUSH_MS while the program writes, and, taken by the
  // host itself, when the program waits and when the run ends. Lengths are in
  // UTF-16 code units throughout, as the parent counts them.
  const KEEP = outputTail + 1; // one more than the tail: a pair cut at the front is never in it
  const CAP = MathMax(4 * KEEP, 65536);
  const FLUSH_MS = 100;
  const out = { __proto__: null, text: '', skip: 0 };
  let headLeft = outputHead;
  let lastFlush = DateNow();
  function flushOutput() {
    if (out.text === '' && out.skip === 0) return;
    const text = out.text, skip = out.skip;
    out.text = '';
    out.skip = 0;
    hostEmit(text, skip);
  }
  // emit either takes all of s (sent, or waiting, or counted as cut) or, when
  // the engine runs out of memory part way, none of it: everything that can
  // fail is computed before any state changes.
  function emit(s) {
    if (headLeft > 0 && s.length <= headLeft) {
      headLeft -= s.length;
      hostEmit(s, 0);
      return;
    }
    let head = null, rest = s;
    if (headLeft > 0) {
      // The head ends inside s: send up to there (a pair across the end
      // goes whole, and the parent cuts it), the rest waits.
      let cut = headLeft;
      const hi = StringPrototypeCharCodeAt(s, cut - 1), lo = StringPrototypeCharCodeAt(s, cut);
      if (hi >= 0xD800 && hi <= 0xDBFF && lo >= 0xDC00 && lo <= 0xDFFF) cut++;
      head = StringPrototypeSlice(s, 0, cut);
      rest = StringPrototypeSlice(s, cut);
    }
    let text = out.text + rest, skip = out.skip;
    if (text.length > CAP) {
      const drop = text.length - KEEP;
      text = StringPrototypeSlice(text, drop);
      skip += drop;
    }
    const now = DateNow();
    // Nothing below allocates in the engine.
    if (head !== null) {
      headLeft = 0;
      hostEmit(head, 0);
    }
    out.text = text;
    out.skip = skip;
    if (now - lastFlush >= FLUSH_MS) {
      lastFlush = now;
      flushOutput();
    }
  }
  function write(prefix, args) {
    let s = prefix;
    for (let i = 0; i < args.length; i++) {
      if (i > 0) s += ' ';
      s += inspect(args[i], 0, null);
    }
    emit(s + '\n');
  }
  const console = ObjectFreeze({
    log(...a) { write('', a); },
    info(...a) { write('', a); },
    debug(...a) { write('', a); },
    warn(...a) { write('[warn] ', a); },
    error(...a) { write('[error] ', a); },
  });

  // ---- the globals a program is promised ----

  const fixed = (value) => desc(value, false, false, false);
  ReflectDefineProperty(g, 'tools', fixed(tools));
  ReflectDefineProperty(g, 'input', desc(input, true, false, false));
  ReflectDefineProperty(g, 'console', fixed(console));
  ReflectDefineProperty(g, 'print', fixed(function print(...a) { write('', a); }));
  ReflectDefineProperty(g, 'ToolRefused', fixed(ToolRefused));
  ReflectDefineProperty(g, 'ToolFailed', fixed(ToolFailed));
  function deepFreeze(v) {
    if (v !== null && typeof v === 'object' && !ObjectIsFrozen(v)) {
      ObjectFreeze(v);
      const keys = ReflectOwnKeys(v);
      for (let i = 0; i < keys.length; i++) deepFreeze(v[keys[i]]);
    }
    return v;
  }
  ReflectDefineProperty(g, 'ALL_TOOLS', {
    __proto__: null,
    configurable: true,
    enumerable: false,
    get() {
      const all = deepFreeze(JSONParse(hostCatalog()));
      ReflectDefineProperty(g, 'ALL_TOOLS', fixed(all));
      return all;
    },
  });

  // ---- the ending ----
  //
  // host.finish(kind, a, b, c, flag) reports it once: ('returned', json),
  // ('threw', name, message, stack, flag), or ('unsendable', why) when the
  // returned value could not be turned into JSON in the memory left. The flag
  // of threw is 1 for a thrown null (the engine throws null when it cannot
  // allocate even its error), 2 when describing the value ran out of memory.

  function describe(e) {
    if (e === null) {
      hostFinish('threw', 'NonError', 'the program threw null', '', 1);
      return;
    }
    if (inherits(e, ErrorPrototype)) {
      hostFinish('threw', errorField(e, 'name'), errorField(e, 'message'), errorStack(e), 0);
      return;
    }
    let text;
    try {
      text = typeof e === 'string' ? quote(e) : inspect(e, 1, null);
    } catch (_) {
      text = typeof e === 'object' ? 'an object that could not be inspected' : typeof e;
    }
    hostFinish('threw', 'NonError', 'the program threw a non-Error value: ' + text, '', 0);
  }
  function onReturn(v) {
    flushOutput();
    let json;
    try {
      json = JSONStringify(v);
      if (json === undefined) {
        json = v === undefined ? 'null' : JSONStringify('[the returned value is a ' + typeof v + ', which JSON cannot hold]');
      }
    } catch (e) {
      if (isOutOfMemory(e)) {
        hostFinish('unsendable', 'converting the returned value to JSON ran out of memory', '', '', 0);
        return;
      }
      json = JSONStringify('[the returned value could not be converted to JSON: ' + messageOf(e) + ']');
    }
    hostFinish('returned', json, '', '', 0);
  }
  function onThrow(e) {
    flushOutput();
    try {
      describe(e);
    } catch (x) {
      // Only the engine gets here (every read above is guarded): out of
      // memory, or the stack. The host tells which from the memory it sees.
      hostFinish('threw', 'Error', 'the program threw a value the runtime could not describe', '', isOutOfMemory(x) ? 2 : 0);
    }
  }

  function start(code) {
    let p;
    try {
      p = new AsyncFunction(code)();
    } catch (e) {
      onThrow(e); // the program does not compile
      return undefined;
    }
    // The program never holds p: an own constructor of undefined keeps then
    // from looking up a species the program could have replaced.
    ReflectDefineProperty(p, 'constructor', desc(undefined, false, false, false));
    PromisePrototypeThen(p, onReturn, onThrow);
    return p;
  }

  // explain tells the host what reached it out of an entry point above
  // (only the engine gets a value past their handlers): 'oom' for the
  // engine's out-of-memory error, else [name, message, stack].
  function explain(e) {
    if (isOutOfMemory(e)) return 'oom';
    if (inherits(e, ErrorPrototype)) return [errorField(e, 'name'), errorField(e, 'message'), errorStack(e)];
    return ['Error', 'the program threw a value the runtime could not describe', ''];
  }

  return { __proto__: null, start, resolve, fail, out, explain };
})
