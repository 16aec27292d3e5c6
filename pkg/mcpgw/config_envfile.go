package mcpgw

// This file loads a server's envFile: the dotenv files VS Code's mcp.json
// names, which is how people keep tokens out of their configs.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// MaxEnvFileBytes caps an envFile, checked before it is parsed: a dotenv
// file holds a few dozen variables; a megabyte is far past any real one.
const MaxEnvFileBytes = 1 << 20

// loadEnvFile reads the dotenv file at path (already expanded and resolved)
// and returns its variables, reporting problems under where with the file's
// line numbers, naming the file as written (its expansion may hold a
// secret). Its values are secrets: no message quotes one.
//
// The format is the one VS Code and the dotenv libraries read: NAME=value
// lines, "export " before NAME allowed, # comments on their own line or
// after an unquoted value (after a space), blank lines, values in double
// quotes (with \n, \r, \t, \" and \\ escapes) or single quotes (taken as
// they are). A later line wins over an earlier one for the same NAME.
func (p *configParser) loadEnvFile(where, path, written string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		what := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			what = pe.Err.Error()
		}
		p.problem(where, fmt.Sprintf("cannot read %s: %s", quoteValue(written), what))
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEnvFileBytes+1))
	if err != nil {
		p.problem(where, fmt.Sprintf("cannot read %s: it is not a file", quoteValue(written)))
		return nil
	}
	if len(data) > MaxEnvFileBytes {
		p.problem(where, fmt.Sprintf("%s is larger than %s, the most an envFile may be; name the right file", quoteValue(written), FormatSize(MaxEnvFileBytes)))
		return nil
	}
	vars, problems := parseEnvFile(data)
	for _, pr := range problems {
		p.problem(where, fmt.Sprintf("%s line %d: %s", quoteValue(written), pr.line, pr.what))
	}
	return vars
}

type envFileProblem struct {
	line int
	what string
}

// parseEnvFile parses dotenv text; see loadEnvFile.
func parseEnvFile(data []byte) (map[string]string, []envFileProblem) {
	vars := map[string]string{}
	var problems []envFileProblem
	sc := bufio.NewScanner(bytes.NewReader(bytes.TrimPrefix(data, []byte("\uFEFF"))))
	sc.Buffer(make([]byte, 0, 4096), MaxEnvFileBytes+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, raw, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok {
			problems = append(problems, envFileProblem{n, "not NAME=value; write it like TOKEN=abc, or start the line with # for a comment"})
			continue
		}
		if name == "" || strings.ContainsAny(name, " \t\x00") {
			problems = append(problems, envFileProblem{n, "the name before = is empty or holds a space or NUL; write it like TOKEN=abc"})
			continue
		}
		v, bad := envFileValue(strings.TrimSpace(raw))
		if bad != "" {
			problems = append(problems, envFileProblem{n, bad})
			continue
		}
		if strings.IndexByte(v, 0) >= 0 {
			problems = append(problems, envFileProblem{n, "the value holds a NUL byte; an environment variable cannot"})
			continue
		}
		vars[name] = v
	}
	if err := sc.Err(); err != nil {
		problems = append(problems, envFileProblem{0, err.Error()})
	}
	return vars, problems
}

// envFileValue decodes one value: quoted, or plain up to a " #" comment.
func envFileValue(raw string) (string, string) {
	if raw == "" {
		return "", ""
	}
	switch q := raw[0]; q {
	case '\'':
		end := strings.IndexByte(raw[1:], '\'')
		if end < 0 {
			return "", "the value's single quote is not closed on its line"
		}
		if rest := strings.TrimSpace(raw[end+2:]); rest != "" && rest[0] != '#' {
			return "", "text after the closing quote; put a comment after #"
		}
		return raw[1 : end+1], ""
	case '"':
		var b strings.Builder
		for i := 1; i < len(raw); i++ {
			c := raw[i]
			switch {
			case c == '"':
				if rest := strings.TrimSpace(raw[i+1:]); rest != "" && rest[0] != '#' {
					return "", "text after the closing quote; put a comment after #"
				}
				return b.String(), ""
			case c == '\\' && i+1 < len(raw):
				i++
				switch raw[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(raw[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", "the value's double quote is not closed on its line"
	}
	if k := strings.Index(raw, " #"); k >= 0 {
		raw = raw[:k]
	}
	return strings.TrimSpace(raw), ""
}
