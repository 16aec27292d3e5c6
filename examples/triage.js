// Triage the demo tracker in one run: many tool calls, one small answer.
//   bin/run-js-server run --demo examples/triage.js
// Without code mode an agent would make these calls one turn at a time and
// read every issue into its context; here it reads only the summary.
const { structuredContent: open } = await tools.demo.list_issues({ state: 'open', label: 'bug' });

// Fetch every open bug at once (at most 16 in flight; the rest wait their turn).
const issues = (await Promise.all(open.issues.map((i) => tools.demo.get_issue({ id: i.id }))))
  .map((r) => r.structuredContent);

const unassigned = issues.filter((x) => !x.issue.assignee);
const busiest = [...issues].sort((a, b) => b.comments.length - a.comments.length)[0];
console.log(`${issues.length} open bugs, ${unassigned.length} unassigned`);

// Act on what was found: leave a note on each unassigned bug.
for (const x of unassigned) {
  await tools.demo.add_comment({ id: x.issue.id, body: 'Triage: this bug has no assignee yet.' });
}

return {
  openBugs: issues.length,
  unassigned: unassigned.map((x) => `#${x.issue.id} ${x.issue.title}`),
  mostDiscussed: { id: busiest.issue.id, comments: busiest.comments.length },
};
