package mcpgw

// This file is the environment a stdio server starts with, as policy data:
// the ecosystem's convention (the TypeScript SDK's getDefaultEnvironment,
// which Claude Desktop, Cursor and VS Code use) plus what the server's own
// entry gives it.

import (
	"sort"
	"strings"
)

// inheritedByDefault are the only variables of the gateway's environment a
// stdio server gets without asking: what a program needs to find its
// executables, its home and its terminal, and nothing that holds a secret.
// The list is the TypeScript SDK's for POSIX systems.
var inheritedByDefault = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// serverEnviron is a stdio server's environment, from the lowest layer to
// the highest (a later layer wins for the same name):
//  1. inheritedByDefault, read from the gateway's environment with lookup
//     (a value that starts with "()" is a shell function, skipped as the
//     TypeScript SDK skips it);
//  2. the variables its inheritEnv names (read at config load);
//  3. its envFile's variables;
//  4. its env.
//
// Nothing else of the gateway's environment reaches it. The result is
// sorted, so a server's environment is the same from start to start.
func serverEnviron(sc ServerConfig, lookup func(string) (string, bool)) []string {
	env := map[string]string{}
	for _, k := range inheritedByDefault {
		if v, ok := lookup(k); ok && !strings.HasPrefix(v, "()") {
			env[k] = v
		}
	}
	for _, layer := range []map[string]string{sc.inherited, sc.envFileVars, sc.Env} {
		for k, v := range layer {
			env[k] = v
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
