package mcpgw

// This file holds what keeps a server's secrets out of everything the
// gateway shows: reasons in server_info, refusals and failures a program
// reads, log lines, and the server's own stderr and stray stdout as logged.

import (
	"net/url"
	"sort"
	"strings"
)

// minSecretLen: values shorter than this are not redacted, since they
// would blank out ordinary words and digits ("1", "on", "dev") in every
// message; a credential is longer.
const minSecretLen = 4

// scrubber replaces a server's secret values with redactedText.
type scrubber struct {
	url     string   // the server's URL, shown redacted (redactURL)
	secrets []string // longest first, so a secret inside another goes with it
}

// newScrubber gathers a server's secrets: every ${VAR} value its config
// expanded, its inherited variables, its env, envFile and header values,
// each also as URL-escaped, since errors about a URL print it escaped.
func newScrubber(sc ServerConfig) *scrubber {
	seen := map[string]bool{}
	var all []string
	add := func(v string) {
		if len(v) >= minSecretLen && !seen[v] {
			seen[v] = true
			all = append(all, v)
		}
	}
	for _, v := range sc.secrets {
		add(v)
		add(url.PathEscape(v))
		add(url.QueryEscape(v))
	}
	for _, m := range []map[string]string{sc.Env, sc.Headers, sc.envFileVars, sc.inherited} {
		for _, v := range m {
			add(v)
		}
	}
	sort.Slice(all, func(i, j int) bool { return len(all[i]) > len(all[j]) })
	return &scrubber{url: sc.URL, secrets: all}
}

// scrub takes the secrets out of s.
func (s *scrubber) scrub(text string) string {
	if s == nil {
		return text
	}
	if s.url != "" {
		text = strings.ReplaceAll(text, s.url, redactURL(s.url))
	}
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, redactedText)
	}
	return text
}
