package mcpgw

// This file holds the demo downstream server: a small, deterministic issue
// tracker served over stdio, so that a real program can make real MCP calls
// with nothing else installed.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// demoIssue is one issue of the demo tracker.
type demoIssue struct {
	ID       int      `json:"id" jsonschema:"the issue number"`
	Title    string   `json:"title"`
	State    string   `json:"state" jsonschema:"open or closed"`
	Labels   []string `json:"labels"`
	Assignee string   `json:"assignee,omitempty"`
	Comments int      `json:"comments" jsonschema:"how many comments the issue has"`
}

// demoComment is one comment.
type demoComment struct {
	ID     int    `json:"id"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

type demoListIn struct {
	State string `json:"state,omitempty" jsonschema:"open, closed or all (default open)"`
	Label string `json:"label,omitempty" jsonschema:"only issues with this label"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many (default 20)"`
}

type demoListOut struct {
	Issues []demoIssue `json:"issues"`
	Total  int         `json:"total" jsonschema:"how many matched before the limit"`
}

type demoGetIn struct {
	ID int `json:"id" jsonschema:"the issue number"`
}

type demoGetOut struct {
	Issue    demoIssue     `json:"issue"`
	Body     string        `json:"body"`
	Comments []demoComment `json:"comments"`
}

type demoCommentIn struct {
	ID   int    `json:"id" jsonschema:"the issue number"`
	Body string `json:"body" jsonschema:"the comment's text"`
}

type demoCommentOut struct {
	CommentID int `json:"commentId"`
	Comments  int `json:"comments"`
}

// demoTracker is the tracker's state: fixed issues, comments added in memory.
type demoTracker struct {
	mu       sync.Mutex
	issues   []demoIssue
	bodies   map[int]string
	comments map[int][]demoComment
	nextID   int
}

func newDemoTracker() *demoTracker {
	t := &demoTracker{bodies: map[int]string{}, comments: map[int][]demoComment{}, nextID: 1000}
	titles := []struct {
		title, state, assignee string
		labels                 []string
	}{
		{"Login fails with SSO when the session cookie expires", "open", "ana", []string{"bug", "auth"}},
		{"Add dark mode to the settings page", "open", "", []string{"feature", "ui"}},
		{"Crash when uploading a file over 2 GB", "open", "ben", []string{"bug", "uploads"}},
		{"Document the rate limits of the public API", "closed", "cho", []string{"docs"}},
		{"Search results ignore accents", "open", "", []string{"bug", "search"}},
		{"Export reports as CSV", "open", "ana", []string{"feature", "reports"}},
		{"Memory leak in the websocket gateway", "open", "dev", []string{"bug", "performance"}},
		{"Upgrade the database driver", "closed", "ben", []string{"chore"}},
		{"Flaky test: TestCheckoutRetry", "open", "", []string{"bug", "tests"}},
		{"Translate onboarding emails to Spanish", "open", "eli", []string{"i18n"}},
		{"Slow dashboard for accounts with 10k projects", "open", "dev", []string{"bug", "performance"}},
		{"Add audit log for permission changes", "closed", "cho", []string{"feature", "security"}},
	}
	for i, x := range titles {
		id := 101 + i
		t.issues = append(t.issues, demoIssue{ID: id, Title: x.title, State: x.state, Labels: x.labels, Assignee: x.assignee})
		t.bodies[id] = fmt.Sprintf("Issue %d: %s. Steps to reproduce and expected behaviour are in the linked report.", id, x.title)
		for j := 0; j < i%4; j++ {
			t.comments[id] = append(t.comments[id], demoComment{ID: t.nextID, Author: []string{"ana", "ben", "cho", "dev"}[j], Body: fmt.Sprintf("Comment %d on #%d.", j+1, id)})
			t.nextID++
		}
	}
	return t
}

func (t *demoTracker) issue(i int) demoIssue {
	x := t.issues[i]
	x.Comments = len(t.comments[x.ID])
	x.Labels = append([]string(nil), x.Labels...)
	return x
}

// NewDemoServer returns the demo issue tracker: list_issues, get_issue and
// add_comment, with output schemas.
func NewDemoServer(version string) *mcp.Server {
	t := newDemoTracker()
	s := mcp.NewServer(&mcp.Implementation{Name: "run-js-server-demo", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "list_issues", Description: "List issues of the tracker, newest last, filtered by state and label."},
		func(_ context.Context, _ *mcp.CallToolRequest, in demoListIn) (*mcp.CallToolResult, demoListOut, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			state := in.State
			if state == "" {
				state = "open"
			}
			if state != "open" && state != "closed" && state != "all" {
				return nil, demoListOut{}, fmt.Errorf("state %q: use open, closed or all", in.State)
			}
			limit := in.Limit
			if limit <= 0 {
				limit = 20
			}
			out := demoListOut{Issues: []demoIssue{}}
			for i := range t.issues {
				x := t.issue(i)
				if (state != "all" && x.State != state) || (in.Label != "" && !slices.Contains(x.Labels, in.Label)) {
					continue
				}
				out.Total++
				if len(out.Issues) < limit {
					out.Issues = append(out.Issues, x)
				}
			}
			return nil, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "get_issue", Description: "Get one issue with its body and comments."},
		func(_ context.Context, _ *mcp.CallToolRequest, in demoGetIn) (*mcp.CallToolResult, demoGetOut, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			for i := range t.issues {
				if t.issues[i].ID == in.ID {
					cs := append([]demoComment{}, t.comments[in.ID]...)
					return nil, demoGetOut{Issue: t.issue(i), Body: t.bodies[in.ID], Comments: cs}, nil
				}
			}
			return nil, demoGetOut{}, fmt.Errorf("no issue #%d (issues are 101 to %d)", in.ID, 100+len(t.issues))
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_comment", Description: "Add a comment to an issue."},
		func(_ context.Context, _ *mcp.CallToolRequest, in demoCommentIn) (*mcp.CallToolResult, demoCommentOut, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			if strings.TrimSpace(in.Body) == "" {
				return nil, demoCommentOut{}, fmt.Errorf("body is empty")
			}
			for i := range t.issues {
				if t.issues[i].ID == in.ID {
					t.comments[in.ID] = append(t.comments[in.ID], demoComment{ID: t.nextID, Author: "agent", Body: in.Body})
					t.nextID++
					return nil, demoCommentOut{CommentID: t.nextID - 1, Comments: len(t.comments[in.ID])}, nil
				}
			}
			return nil, demoCommentOut{}, fmt.Errorf("no issue #%d", in.ID)
		})
	return s
}
