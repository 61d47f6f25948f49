package ledger

import (
	"bytes"
	"html/template"
	"net/http"
)

// The web front's pages: plain server-rendered HTML, no script, with the DOM ids and data
// attributes a browser-driven test reads (#banner[data-state], #balances tr[data-account],
// #transfers li[data-id], #transfer-form, #submit, #outcome[data-outcome][data-key]).

// Outcomes of a submission as the pages show them.
const (
	outcomeConfirmed = "confirmed"
	outcomeRefused   = "refused"
	outcomePending   = "pending"
)

type accountBalance struct {
	Account string
	Balance int64
}

type pageView struct {
	Banner   string
	Balances []accountBalance
	Recent   []Transfer
	Key      string
}

type outcomeView struct {
	Banner   string
	Outcome  string
	Key      string
	Transfer Transfer
	Message  string
}

const layout = `{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ledger</title></head><body>
<div id="banner" data-state="{{.Banner}}">{{if eq .Banner "unreachable"}}The ledger's backend is unreachable: balances cannot be shown and transfers are not accepted right now.{{else if eq .Banner "slow"}}The ledger's backend is slow: it did not answer in time. What is shown may be incomplete; a transfer submitted now may stay pending.{{end}}</div>
{{end}}{{define "foot"}}</body></html>
{{end}}`

var pageTemplate = template.Must(template.New("page").Parse(layout + `{{template "head" .}}<h1>Ledger</h1>
<table id="balances"><tr><th>account</th><th>balance</th></tr>
{{range .Balances}}<tr data-account="{{.Account}}"><td>{{.Account}}</td><td class="balance">{{.Balance}}</td></tr>
{{end}}</table>
<h2>Recent transfers</h2>
<ul id="transfers">
{{range .Recent}}<li data-id="{{.ID}}">{{.ID}}: {{.Amount}} from {{.From}} to {{.To}}</li>
{{end}}</ul>
<h2>Transfer</h2>
<form id="transfer-form" method="post" action="/transfer">
<label>from <input name="from" type="text" required></label>
<label>to <input name="to" type="text" required></label>
<label>amount <input name="amount" type="text" inputmode="numeric" required></label>
<input type="hidden" name="key" value="{{.Key}}">
<button id="submit" type="submit">Transfer</button>
</form>
{{template "foot" .}}`))

var outcomeTemplate = template.Must(template.New("outcome").Parse(layout + `{{template "head" .}}<h1>Transfer</h1>
<div id="outcome" data-outcome="{{.Outcome}}" data-key="{{.Key}}"><p>{{.Message}}</p></div>
{{if and (eq .Outcome "pending") .Transfer.Amount}}<form id="resubmit-form" method="post" action="/transfer">
<input type="hidden" name="from" value="{{.Transfer.From}}"><input type="hidden" name="to" value="{{.Transfer.To}}">
<input type="hidden" name="amount" value="{{.Transfer.Amount}}"><input type="hidden" name="key" value="{{.Key}}">
<button id="resubmit" type="submit">Submit again (same key: it cannot apply twice)</button>
</form>{{end}}
{{if .Key}}<p><a id="status-link" href="/transfer/{{.Key}}">Status of this transfer</a></p>{{end}}
<p><a id="home" href="/">Back to the ledger</a></p>
{{template "foot" .}}`))

// render executes t into a buffer first, so a template error (a bug, never a backend fault)
// is a plain error answer rather than half a page.
func render(rw http.ResponseWriter, status int, t *template.Template, v any) {
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		http.Error(rw, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	b.WriteTo(rw)
}
