package mcpgw

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// badArgs are calls of the gateway's tools that must be refused, each with
// what the message must say (in the user's units, ms and MiB).
var badArgs = []struct {
	tool string
	args string
	want string
}{
	{"run_js", `{"code":"return 1","timeout_ms":0}`, "timeout_ms 0 ms is out of range; give 100 to 600000 ms (100 ms to 10 min), or leave it out for the default 30000 ms (30 s)"},
	{"run_js", `{"code":"return 1","timeout_ms":-5}`, "timeout_ms -5 ms is out of range; give 100 to 600000 ms"},
	{"run_js", `{"code":"return 1","timeout_ms":99}`, "timeout_ms 99 ms is out of range"},
	{"run_js", `{"code":"return 1","timeout_ms":600001}`, "timeout_ms 600001 ms is out of range"},
	{"run_js", `{"code":"return 1","timeout_ms":1500.5}`, "timeout_ms 1500.5 is not a whole number of milliseconds"},
	{"run_js", `{"code":"return 1","timeout_ms":"30s"}`, `timeout_ms must be a whole number of milliseconds, not a string ("30s"); give 100 to 600000 ms`},
	{"run_js", `{"code":"return 1","timeout_ms":null}`, "timeout_ms must be a whole number of milliseconds, not null"},
	{"run_js", `{"code":"return 1","timeout_ms":1e400}`, "timeout_ms 1e400 ms is out of range"},
	{"run_js", `{"code":"return 1","memory_mb":0}`, "memory_mb 0 MiB is out of range; give 4 to 2048 MiB (4 MiB to 2 GiB), or leave it out for the default 64 MiB"},
	{"run_js", `{"code":"return 1","memory_mb":-1}`, "memory_mb -1 MiB is out of range"},
	{"run_js", `{"code":"return 1","memory_mb":3}`, "memory_mb 3 MiB is out of range"},
	{"run_js", `{"code":"return 1","memory_mb":2049}`, "memory_mb 2049 MiB is out of range"},
	{"run_js", `{"code":"return 1","memory_mb":9007199254740991}`, "memory_mb 9007199254740991 MiB is out of range; give 4 to 2048 MiB"},
	{"run_js", `{"code":"return 1","memory_mb":64.5}`, "memory_mb 64.5 is not a whole number of MiB"},
	{"run_js", `{"code":"return 1","yield_ms":0}`, "yield_ms 0 ms is out of range; give 1 to 120000 ms (1 ms to 2 min), or leave it out for the default 10000 ms (10 s)"},
	{"run_js", `{"code":"return 1","yield_ms":120001}`, "yield_ms 120001 ms is out of range"},
	{"run_js", `{"code":"return 1","yield_ms":0.5}`, "yield_ms 0.5 ms is out of range"},
	{"run_js", `{"code":"return 1","language":"python"}`, `language "python" is not one of "javascript" or "typescript"`},
	{"run_js", `{"code":"return 1","timeout":5000}`, `unknown argument "timeout"; did you mean "timeout_ms"?`},
	{"run_js", `{"code":"   "}`, "code is empty"},
	{"run_js", `{"code":1}`, "code must be a string, not a number"},
	{"run_js", `{}`, "code is missing"},
	{"wait_js", `{"scriptId":"js-x","yield_ms":0}`, "yield_ms 0 ms is out of range"},
	{"wait_js", `{"scriptId":"js-x","yield_ms":-1}`, "yield_ms -1 ms is out of range"},
	{"wait_js", `{"yield_ms":5}`, "scriptId is missing"},
	{"wait_js", `{"scriptId":"js-x","extra":1}`, `unknown argument "extra"; wait_js takes scriptId, yield_ms`},
	{"stop_js", `{"scriptId":""}`, "scriptId is empty"},
	{"stop_js", `{"scriptId":"js-x","force":true}`, `unknown argument "force"; stop_js takes scriptId`},
	{"list_js", `{"all":true}`, `unknown argument "all": list_js takes no arguments; send {}`},
	{"server_info", `{"verbose":true}`, `unknown argument "verbose": server_info takes no arguments; send {}`},
	{"search_tools", `{"limit":0}`, "limit 0 is out of range; give 1 to 50, or leave it out for the default 10"},
	{"search_tools", `{"limit":51}`, "limit 51 is out of range"},
	{"search_tools", `{"limit":2.5}`, "limit 2.5 is not a whole number"},
	{"search_tools", `{"names":"demo.get_issue"}`, "names must be an array of strings, not a string"},
	{"search_tools", `{"names":["a",1]}`, "names[1] must be a string, not a number"},
	{"search_tools", `{"query":["read"]}`, "query must be a string, not an array"},
	{"search_tools", `{"qeury":"read"}`, `unknown argument "qeury"; did you mean "query"?`},
}

// TestBadArgumentsOverMCP: every bad argument of every tool is refused
// (isError) with its message, through a real client.
func TestBadArgumentsOverMCP(t *testing.T) {
	g := newTestGateway(t)
	cs := mcpClient(t, g)
	for _, tc := range badArgs {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.Contains(text, tc.want) || !strings.HasPrefix(text, tc.tool+": ") {
				t.Fatalf("isError %v, text:\n%s\nwant it to start with %q and contain:\n%s", res.IsError, text, tc.tool+": ", tc.want)
			}
		})
	}
}

// TestCheckArgs covers what a client library would not send: duplicate
// keys, arguments that are not an object, trailing data.
func TestCheckArgs(t *testing.T) {
	specs := []argSpec{{name: "n", kind: argInteger, min: 1, max: 10, def: 5, doc: "a count"}, {name: "s", kind: argString, required: true, doc: "a name"}}
	for _, tc := range []struct{ raw, want string }{
		{`{"s":"a","n":1,"n":2}`, "t: n appears twice; send it once"},
		{`[1]`, `t: the arguments must be a JSON object, like {"s": …}, not an array`},
		{`"x"`, "not a string"},
		{`{"s":"a"} {}`, "t: the arguments are not one JSON object"},
		{`{"s":"a"`, "t: the arguments are not valid JSON"},
		{`{"s":"a","n":1e1}`, ""}, // 10: a whole number, however written
		{`{"s":"a","n":10.0}`, ""},
		{`{"s":"a","n":-0}`, "t: n -0 is out of range; give 1 to 10, or leave it out for the default 5"},
		{`{"s":"a","n":1.0000000000000001}`, ""}, // the same float as 1
		{`{"s":"a","n":` + strings.Repeat("9", 400) + `}`, "is out of range"},
		{`null`, "t: s is missing: a name"},
		{``, "t: s is missing"},
	} {
		_, err := checkArgs("t", specs, json.RawMessage(tc.raw))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.raw, err, tc.want)
		}
	}
	if _, err := checkArgs("t", specs, json.RawMessage(`{"s":"`+strings.Repeat("x", maxArgsBytes)+`"}`)); err == nil || !strings.Contains(err.Error(), "above the cap of 6MiB") {
		t.Errorf("arguments over the cap: %v", err)
	}
	g := newTestGateway(t)
	big := `{"code":"return 1","input":"` + strings.Repeat("x", wire.MaxInputBytes) + `"}`
	if _, err := checkArgs("run_js", g.runJSArgs(), json.RawMessage(big)); err == nil || !strings.Contains(err.Error(), "run_js: input is 4194306 bytes of JSON, above the cap of 4MiB") {
		t.Errorf("input over its cap: %v", err)
	}
}

// TestSchemasStateTheRealRanges: each tool's inputSchema gives the ranges
// in force, and a schema validator accepts exactly the arguments the
// handlers accept.
func TestSchemasStateTheRealRanges(t *testing.T) {
	g := newTestGateway(t)
	cs := mcpClient(t, g)
	schemas := map[string]json.RawMessage{}
	var tools []wire.Tool
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(tool.InputSchema)
		schemas[tool.Name] = b
		tools = append(tools, wire.Tool{Server: "self", Name: tool.Name, InputSchema: b})
	}
	var runJS struct {
		Properties map[string]struct {
			Minimum, Maximum, Default *int64
			Enum                      []string
		}
		AdditionalProperties *bool
	}
	if err := json.Unmarshal(schemas["run_js"], &runJS); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][3]int64{
		"timeout_ms": {wire.MinTimeout.Milliseconds(), g.cfg.MaxTimeout.Milliseconds(), wire.DefaultTimeout.Milliseconds()},
		"memory_mb":  {wire.MinMemory >> 20, wire.MaxMemory >> 20, wire.DefaultMemory >> 20},
		"yield_ms":   {MinYield.Milliseconds(), MaxYield.Milliseconds(), DefaultYield.Milliseconds()},
	} {
		p := runJS.Properties[name]
		if p.Minimum == nil || p.Maximum == nil || p.Default == nil || *p.Minimum != want[0] || *p.Maximum != want[1] || *p.Default != want[2] {
			t.Errorf("run_js %s: minimum, maximum, default %v %v %v, want %v", name, p.Minimum, p.Maximum, p.Default, want)
		}
	}
	if l := runJS.Properties["language"].Enum; strings.Join(l, ",") != "javascript,typescript" {
		t.Errorf("language enum %v", l)
	}
	for name, s := range schemas {
		if !strings.Contains(string(s), `"additionalProperties":false`) {
			t.Errorf("%s's schema allows unknown fields: %s", name, s)
		}
	}

	validator, problems := newArgsValidator(tools)
	if len(problems) > 0 {
		t.Fatalf("our own schemas do not compile: %+v", problems)
	}
	specs := map[string][]argSpec{}
	for _, o := range g.ownTools(&searchCache{}, g.runJSDescription()) {
		specs[o.name] = o.args
	}
	cases := []struct{ tool, args string }{
		{"run_js", `{"code":"return 1"}`}, {"run_js", `{"code":"x","language":"typescript","timeout_ms":100,"memory_mb":4,"yield_ms":1,"input":[1]}`},
		{"run_js", `{"code":"x","timeout_ms":600000,"memory_mb":2048,"yield_ms":120000}`}, {"search_tools", `{}`},
		{"search_tools", `{"query":"read file","server":"s","names":["a"],"limit":50}`}, {"wait_js", `{"scriptId":"x"}`},
		{"stop_js", `{"scriptId":"x"}`}, {"list_js", `{}`}, {"server_info", `{}`}, {"run_js", `{"code":"x","timeout_ms":1e3}`},
	}
	for _, b := range badArgs {
		cases = append(cases, struct{ tool, args string }{b.tool, b.args})
	}
	for _, tc := range cases {
		if strings.Contains(tc.args, "1e400") {
			continue // the validator's number syntax cap refuses it; both refuse
		}
		_, handlerErr := checkArgs(tc.tool, specs[tc.tool], json.RawMessage(tc.args))
		schemaErr := validator.Validate("self", tc.tool, []byte(tc.args))
		if (handlerErr == nil) != (schemaErr == nil) {
			t.Errorf("%s %s: the handler says %v, the schema says %v", tc.tool, tc.args, handlerErr, schemaErr)
		}
	}
}

// TestConfigMaximaNarrowTheSchema: a config's lower maxima are the ranges
// the schema states and the handler enforces.
func TestConfigMaximaNarrowTheSchema(t *testing.T) {
	g := newTestGateway(t)
	g.cfg.MaxTimeout, g.cfg.MaxMemory = 5_000_000_000, 256<<20 // 5 s, 256 MiB
	specs := g.runJSArgs()
	for _, tc := range []struct{ args, want string }{
		{`{"code":"x","timeout_ms":5001}`, "timeout_ms 5001 ms is out of range; give 100 to 5000 ms (100 ms to 5 s)"},
		{`{"code":"x","memory_mb":257}`, "memory_mb 257 MiB is out of range; give 4 to 256 MiB"},
		{`{"code":"x","timeout_ms":5000,"memory_mb":256}`, ""},
	} {
		_, err := checkArgs("run_js", specs, json.RawMessage(tc.args))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
	}
	if s := string(inputSchema(specs)); !strings.Contains(s, `"maximum":5000`) || !strings.Contains(s, `"maximum":256`) {
		t.Errorf("schema %s", s)
	}
}

func TestHumanUnits(t *testing.T) {
	for ms, want := range map[int64]string{1: "1 ms", 100: "100 ms", 1500: "1.5 s", 30_000: "30 s", 120_000: "2 min", 600_000: "10 min", 90_000: "90 s"} {
		if got := humanMs(ms); got != want {
			t.Errorf("humanMs(%d) = %q, want %q", ms, got, want)
		}
	}
	for mib, want := range map[int64]string{4: "4 MiB", 64: "64 MiB", 1024: "1 GiB", 2048: "2 GiB", 1536: "1536 MiB"} {
		if got := humanMiB(mib); got != want {
			t.Errorf("humanMiB(%d) = %q, want %q", mib, got, want)
		}
	}
}
