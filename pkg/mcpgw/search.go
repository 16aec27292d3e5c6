package mcpgw

// This file holds search_tools' ranking: BM25 (Okapi, with per-field
// weights as BM25F has them) over each tool's name, server, description and
// parameter names, with boosts for an exact tool name and for a named
// server. It is a small implementation of our own: the catalog is at most a
// few thousand short documents, and a library would bring an index, storage
// and analyzers we do not need.

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/run-js-server/run-js-server/pkg/wire"
)

// BM25 parameters: the usual ones. k1 sets how fast repeats of a term stop
// counting; b how much a long document is marked down.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Weights of a tool's fields: a word of its name says more about it than a
// word of its description.
const (
	weightName        = 3.0
	weightServer      = 1.5
	weightParam       = 1.5
	weightDescription = 1.0
	weightParamDoc    = 0.5
	// prefixFactor: a query word that starts a tool's word ("dir" in
	// "directory") counts this much of a whole match.
	prefixFactor = 0.5
	// exactNameBoost puts a tool whose name is the whole query first;
	// serverBoost lifts the tools of a server the query names.
	exactNameBoost = 1000.0
	serverBoost    = 2.0
	// maxSearchTerms bounds the words of a query that count.
	maxSearchTerms = 32
	// maxDocTerms bounds the words indexed of one tool (a long description
	// says what it is about in its start).
	maxDocTerms = 2000
)

// searchDoc is one tool as the index sees it.
type searchDoc struct {
	tool   wire.Tool
	tf     map[string]float64 // weighted frequency of each term
	length float64            // weighted length
	keys   []string           // lower-case names it answers to exactly: name, server.name, tools.server.name
}

// searchIndex is a catalog indexed for ranking. Read-only once built.
type searchIndex struct {
	docs   []searchDoc
	df     map[string]int // how many tools hold each term
	avgLen float64
}

// searchHit is a ranked tool.
type searchHit struct {
	tool  wire.Tool
	score float64
}

// newSearchIndex indexes a catalog.
func newSearchIndex(catalog []wire.Tool) *searchIndex {
	ix := &searchIndex{df: map[string]int{}}
	total := 0.0
	for _, t := range catalog {
		d := searchDoc{tool: t, tf: map[string]float64{}}
		n := 0
		add := func(text string, w float64) {
			for _, term := range searchTerms(text) {
				if n++; n > maxDocTerms {
					return
				}
				d.tf[term] += w
				d.length += w
			}
		}
		add(t.Name, weightName)
		add(t.Server, weightServer)
		add(t.Description, weightDescription)
		for _, p := range schemaParams(t.InputSchema) {
			add(p.name, weightParam)
			add(p.doc, weightParamDoc)
		}
		name := strings.ToLower(t.Name)
		server := strings.ToLower(t.Server)
		d.keys = []string{name, server + "." + name, "tools." + server + "." + name}
		for term := range d.tf {
			ix.df[term]++
		}
		total += d.length
		ix.docs = append(ix.docs, d)
	}
	if len(ix.docs) > 0 {
		ix.avgLen = total / float64(len(ix.docs))
	}
	return ix
}

// search ranks the tools of server ("" for all) against query, best first,
// leaving out those that match no word of it. An empty query lists them
// all in catalog order.
func (ix *searchIndex) search(query, server string) []searchHit {
	terms := searchTerms(query)
	if len(terms) > maxSearchTerms {
		terms = terms[:maxSearchTerms]
	}
	whole := strings.ToLower(strings.TrimSpace(query))
	servers := map[string]bool{}
	for _, w := range strings.FieldsFunc(whole, func(r rune) bool { return unicode.IsSpace(r) || r == ',' }) {
		servers[w] = true
	}
	var hits []searchHit
	for i := range ix.docs {
		d := &ix.docs[i]
		if server != "" && d.tool.Server != server {
			continue
		}
		if whole == "" {
			hits = append(hits, searchHit{tool: d.tool})
			continue
		}
		score := ix.bm25(d, terms)
		for _, k := range d.keys {
			if k == whole {
				score += exactNameBoost
			}
		}
		if score > 0 && servers[strings.ToLower(d.tool.Server)] {
			score += serverBoost
		}
		if score > 0 {
			hits = append(hits, searchHit{tool: d.tool, score: score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	return hits
}

// bm25 scores one tool against the query's terms; a term the tool holds
// only as the start of a longer word counts prefixFactor as much.
func (ix *searchIndex) bm25(d *searchDoc, terms []string) float64 {
	n := float64(len(ix.docs))
	norm := 1.0
	if ix.avgLen > 0 {
		norm = 1 - bm25B + bm25B*d.length/ix.avgLen
	}
	score := 0.0
	for _, q := range terms {
		tf, df := d.tf[q], ix.df[q]
		if tf == 0 && len(q) >= 3 {
			for term, f := range d.tf {
				if len(term) > len(q) && strings.HasPrefix(term, q) {
					tf += f * prefixFactor
					df = max(df, ix.df[term])
				}
			}
		}
		if tf == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
		score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*norm)
	}
	return score
}

// searchTerms splits text into the terms the index compares: words split
// at anything that is not a letter or digit and at camelCase humps, lower
// case, stemmed, without stop words. "readFile", "read_file" and "read
// files" all give [read file].
func searchTerms(text string) []string {
	var terms []string
	var word []rune
	flush := func() {
		if len(word) == 0 {
			return
		}
		w := stem(strings.ToLower(string(word)))
		word = word[:0]
		if w != "" && !stopWords[w] {
			terms = append(terms, w)
		}
	}
	var prev rune
	for _, r := range text {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			word = append(word, r)
		default:
			word = append(word, r)
		}
		prev = r
	}
	flush()
	return terms
}

// stem strips English plural endings, so that "files" and "directories"
// meet "file" and "directory". Short words are left alone; other endings
// are kept ("created" and "create" meet through prefix matching).
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

// stopWords say nothing of what a tool does.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "to": true, "in": true, "for": true, "and": true, "or": true,
	"on": true, "with": true, "by": true, "is": true, "it": true, "this": true, "that": true, "from": true, "as": true,
	"at": true, "be": true, "are": true, "its": true, "into": true, "if": true,
}

// schemaParam is a top-level property of an input schema.
type schemaParam struct{ name, doc string }

// schemaParams lists the top-level properties of an input schema, with
// their descriptions; none for a schema that is not an object of them.
func schemaParams(schema json.RawMessage) []schemaParam {
	if tsEmpty(schema) {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	var out []schemaParam
	for name, p := range s.Properties {
		out = append(out, schemaParam{name, p.Description})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// searchCache keeps the index of the catalog it was last built from, so a
// search over thousands of tools does not tokenize them all each time.
// Safe for concurrent use.
type searchCache struct {
	mu      sync.Mutex
	catalog []wire.Tool // the catalog ix indexes, compared by identity
	ix      *searchIndex
}

// index returns the index of catalog, building it when the catalog is not
// the one last indexed (the gateway replaces its catalog whenever a
// server's tools change).
func (c *searchCache) index(catalog []wire.Tool) *searchIndex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ix == nil || !sameSlice(c.catalog, catalog) {
		c.ix, c.catalog = newSearchIndex(catalog), catalog
	}
	return c.ix
}

// sameSlice reports whether a and b are the same slice: same array, same
// length.
func sameSlice(a, b []wire.Tool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
