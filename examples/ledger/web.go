package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Web is the ledger's web front (`ledger web`): a page listing balances and recent transfers
// with a form that submits a transfer, a page per submission, and a readiness endpoint.
//
// It is built to degrade visibly and safely when its backend misbehaves:
//
//   - every request bounds its backend calls by the timeout, so every answer comes within the
//     timeout plus rendering; no handler waits on Postgres longer than that;
//   - a backend fault never yields a 5xx page except the 503 of a submission the backend
//     certainly did not apply (and of readiness): the page is served with a banner saying the
//     backend is unreachable (it failed fast) or slow (it timed out);
//   - a submission carries the idempotency key rendered into its form, used as the transfer
//     id, so a re-POST (a reload, a second click) can never apply it twice; its answer is
//     confirmed, refused (422 bad input or funds, 503 backend certainly did not apply it) or
//     pending (202: the outcome is unknown), never a guess;
//   - a pending submission is settled in the background by retrying it with the same key until
//     the backend answers (the ledger's retry protocol, see [Definite]), so GET /transfer/KEY
//     ends up confirmed or refused once the backend is back, even when the first attempt never
//     reached it. Close waits for those retries.
type Web struct {
	db      DB
	store   *Store
	timeout time.Duration
	settle  time.Duration
	mux     *http.ServeMux

	mu      sync.Mutex
	closed  bool
	drain   chan struct{} // closed by Close: settles stop backing off and try at once
	stop    chan struct{} // closed when Close gives up waiting: settles give up
	settles sync.WaitGroup
	active  int // settles running, at most maxSettles
}

var _ http.Handler = (*Web)(nil)

// maxSettles bounds the background settles running at once: beyond it a pending submission
// stays pending until the user submits it again (same key, so still safe).
const maxSettles = 64

// WebOption configures a Web.
type WebOption func(*Web)

// WebTimeout bounds every backend call one request makes (default 1s).
func WebTimeout(d time.Duration) WebOption { return func(w *Web) { w.timeout = d } }

// WebSettleFor bounds how long a pending submission is retried in the background before it
// is left pending (default 2 minutes).
func WebSettleFor(d time.Duration) WebOption { return func(w *Web) { w.settle = d } }

// NewWeb returns the web front over db, typically a *pgxpool.Pool. It makes no connection:
// it serves its degraded page even when the backend is down from the start.
func NewWeb(db DB, opts ...WebOption) *Web {
	w := &Web{db: db, store: NewStore(db), timeout: time.Second, settle: 2 * time.Minute, drain: make(chan struct{}), stop: make(chan struct{})}
	for _, o := range opts {
		o(w)
	}
	w.mux = http.NewServeMux()
	w.mux.HandleFunc("GET /{$}", w.page)
	w.mux.HandleFunc("POST /transfer", w.submit)
	w.mux.HandleFunc("GET /transfer/{key}", w.status)
	w.mux.HandleFunc("GET /readyz", w.ready)
	return w
}

// ServeHTTP serves the front's routes.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) { w.mux.ServeHTTP(rw, r) }

// Close stops taking new background settles and waits until the running ones got an answer
// from the backend or ctx ends; then they give up (their submissions stay pending, safe to
// submit again). The running ones stop backing off: a caller that healed the backend and
// then closes the front sees every settle land before Close returns. It returns ctx's error
// when it had to abandon some.
func (w *Web) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.drain)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() { w.settles.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		w.mu.Lock()
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		w.mu.Unlock()
		<-done
		return fmt.Errorf("close web front: pending submissions left unsettled: %w", ctx.Err())
	}
}

// Banner states: what the page says about the backend.
const (
	bannerOK          = "ok"
	bannerUnreachable = "unreachable"
	bannerSlow        = "slow"
)

// bannerFor says what err, met by a backend call under ctx, means to the user: nil is ok, a
// timeout is slow, anything else (refused, reset, auth) is unreachable.
func bannerFor(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return bannerOK
	case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return bannerSlow
	default:
		return bannerUnreachable
	}
}

// page serves GET /: balances, recent transfers and the form, always 200 (with the banner when
// the backend failed).
func (w *Web) page(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), w.timeout)
	defer cancel()
	v := pageView{Key: newKey()}
	balances, err := w.store.Balances(ctx)
	if err == nil {
		v.Recent, err = recentTransfers(ctx, w.db)
	}
	v.Banner = bannerFor(ctx, err)
	if err == nil {
		for _, a := range slices.Sorted(maps.Keys(balances)) {
			v.Balances = append(v.Balances, accountBalance{Account: a, Balance: balances[a]})
		}
	}
	if v.Banner == bannerSlow && webErrorPage {
		http.Error(rw, "internal server error", http.StatusInternalServerError) // planted defect
		return
	}
	render(rw, http.StatusOK, pageTemplate, v)
}

// keyPattern is what an idempotency key from a form may look like: what newKey renders, or
// any short token a client of its own picks.
var keyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// newKey is a fresh random idempotency key, one per rendered form.
func newKey() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "web-" + hex.EncodeToString(b)
}

// submit serves POST /transfer: applies the form's transfer with its key as the transfer id.
func (w *Web) submit(rw http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(rw, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		render(rw, http.StatusUnprocessableEntity, outcomeTemplate, outcomeView{Banner: bannerOK, Outcome: outcomeRefused,
			Message: "Refused: the form could not be read. Nothing was sent; go back to the ledger and submit again."})
		return
	}
	t, problem := transferFromForm(r)
	if problem != "" {
		render(rw, http.StatusUnprocessableEntity, outcomeTemplate, outcomeView{Banner: bannerOK, Outcome: outcomeRefused, Key: t.ID, Transfer: t,
			Message: "Refused: " + problem + ". Nothing was sent; correct the form and submit again."})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), w.timeout)
	defer cancel()
	o, err := w.apply(ctx, t)
	v := outcomeView{Banner: bannerFor(ctx, err), Key: t.ID, Transfer: t}
	switch {
	case err != nil && Definite(err):
		v.Outcome = outcomeRefused
		v.Message = "Refused: the backend could not take the transfer (" + v.Banner + "), and it certainly did not apply it. Nothing moved; try again in a moment."
		render(rw, http.StatusServiceUnavailable, outcomeTemplate, v)
		return
	case err != nil:
		v.Outcome = outcomePending
		v.Message = "Pending: the backend did not answer in time or the connection broke after the transfer was sent, so it may or may not have been applied. It will be applied at most once: the ledger keeps trying it with the same key; check its status or submit it again, safely."
		w.settleLater(t)
		if webNewKey {
			w.settleLater(Transfer{ID: newKey(), From: t.From, To: t.To, Amount: t.Amount}) // planted defect
		}
		render(rw, http.StatusAccepted, outcomeTemplate, v)
		return
	case o == Duplicate:
		// The key was decided before (a reload, a second click): answer what was decided.
		d, err := decided(ctx, w.db, t.ID)
		v.Banner = bannerFor(ctx, err)
		if err != nil || d == "" {
			v.Outcome = outcomePending
			v.Message = "Pending: this transfer was submitted before, and its outcome could not be read back now. It was applied at most once; check its status in a moment."
			render(rw, http.StatusAccepted, outcomeTemplate, v)
			return
		}
		o = Outcome(d)
	}
	if o == Applied {
		v.Outcome = outcomeConfirmed
		v.Message = fmt.Sprintf("Confirmed: %d moved from %s to %s.", t.Amount, t.From, t.To)
		render(rw, http.StatusOK, outcomeTemplate, v)
		return
	}
	v.Outcome = outcomeRefused
	v.Message = fmt.Sprintf("Refused: %s does not hold %d (or an account does not exist). Nothing moved.", t.From, t.Amount)
	render(rw, http.StatusUnprocessableEntity, outcomeTemplate, v)
}

// transferFromForm reads the submitted transfer, and what is wrong with it ("" when nothing).
func transferFromForm(r *http.Request) (Transfer, string) {
	t := Transfer{ID: r.PostFormValue("key"), From: strings.TrimSpace(r.PostFormValue("from")), To: strings.TrimSpace(r.PostFormValue("to"))}
	if !keyPattern.MatchString(t.ID) {
		t.ID = ""
		return t, "the form carries no valid idempotency key (reload the ledger page for a fresh form)"
	}
	amount, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("amount")), 10, 64)
	if err != nil {
		return t, fmt.Sprintf("the amount %q is not a whole number", r.PostFormValue("amount"))
	}
	t.Amount = amount
	if err := t.Validate(); err != nil {
		_, why, _ := strings.Cut(err.Error(), ": ")
		return t, why
	}
	return t, ""
}

// acquirer is a pool: a submission takes its connection first, so that failing to get one
// (none free, none can be opened) is known not to have sent anything.
type acquirer interface {
	Acquire(ctx context.Context) (*pgxpool.Conn, error)
}

// apply applies t once. An error for which Definite is true means t was not applied by this
// call.
func (w *Web) apply(ctx context.Context, t Transfer) (Outcome, error) {
	p, ok := w.db.(acquirer)
	if !ok {
		return w.store.Transfer(ctx, t)
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		return "", &notSent{fmt.Errorf("apply transfer %s: acquire a connection: %w", t.ID, err)}
	}
	defer c.Release()
	return NewStore(c).Transfer(ctx, t)
}

// notSent marks an error that happened before the request left: the pool gave no connection.
type notSent struct{ err error }

func (e *notSent) Error() string { return e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// SafeToRetry makes Definite (through pgconn.SafeToRetry) take it as "did not happen".
func (e *notSent) SafeToRetry() bool { return true }

// settleLater retries t with its own id in the background until the backend answers, the
// settle window ends or Close gives up: whatever the answer, the id is then decided, and
// GET /transfer/KEY reads it.
func (w *Web) settleLater(t Transfer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.active >= maxSettles {
		return
	}
	w.active++
	w.settles.Add(1)
	go func() {
		defer func() {
			w.mu.Lock()
			w.active--
			w.mu.Unlock()
			w.settles.Done()
		}()
		deadline := time.Now().Add(w.settle)
		for backoff := 50 * time.Millisecond; time.Now().Before(deadline); backoff = min(backoff*2, 2*time.Second) {
			select {
			case <-w.stop:
				return
			case <-w.drain:
				select {
				case <-w.stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			case <-time.After(backoff):
			}
			ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
			_, err := w.apply(ctx, t)
			cancel()
			if err == nil {
				return
			}
		}
	}()
}

// status serves GET /transfer/{key}: the decided outcome of that key, pending when it is not
// decided or cannot be read. Always 200: the page answers a question about the key.
func (w *Web) status(rw http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	v := outcomeView{Banner: bannerOK, Key: key}
	if !keyPattern.MatchString(key) {
		v.Key, v.Outcome = "", outcomeRefused
		v.Message = "Refused: that is not an idempotency key the ledger takes; no transfer has it."
		render(rw, http.StatusOK, outcomeTemplate, v)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), w.timeout)
	defer cancel()
	t, d, err := decidedTransfer(ctx, w.db, key)
	v.Banner, v.Transfer = bannerFor(ctx, err), t
	switch {
	case err != nil:
		v.Outcome = outcomePending
		v.Message = "Pending: the outcome of this transfer cannot be read now; it is applied at most once. Reload in a moment."
	case d == string(Applied):
		v.Outcome = outcomeConfirmed
		v.Message = fmt.Sprintf("Confirmed: %d moved from %s to %s.", t.Amount, t.From, t.To)
	case d == string(Rejected):
		v.Outcome = outcomeRefused
		v.Message = fmt.Sprintf("Refused: %s did not hold %d (or an account does not exist). Nothing moved.", t.From, t.Amount)
	default:
		v.Outcome = outcomePending
		v.Message = "Pending: the ledger has not decided this transfer (yet). Reload in a moment."
	}
	render(rw, http.StatusOK, outcomeTemplate, v)
}

// ready serves GET /readyz: 200 when the backend answered a ledger query within the timeout.
func (w *Web) ready(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), w.timeout)
	defer cancel()
	var n int64
	err := w.db.QueryRow(ctx, `SELECT count(*) FROM accounts`).Scan(&n)
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-store")
	if err != nil {
		rw.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(rw, "not ready: backend %s within %s: %v\n", bannerFor(ctx, err), w.timeout, err)
		return
	}
	fmt.Fprintln(rw, "ready")
}

// decided reads the outcome recorded for a transfer id: "applied", "rejected", or "" when it
// is not decided.
func decided(ctx context.Context, db DB, id string) (string, error) {
	_, d, err := decidedTransfer(ctx, db, id)
	return d, err
}

func decidedTransfer(ctx context.Context, db DB, id string) (Transfer, string, error) {
	t := Transfer{ID: id}
	var d string
	err := db.QueryRow(ctx, `SELECT from_account, to_account, amount, outcome FROM applied_transfers WHERE transfer_id = $1::text`, id).
		Scan(&t.From, &t.To, &t.Amount, &d)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, "", nil
	}
	if err != nil {
		return t, "", fmt.Errorf("read transfer %s: %w", id, err)
	}
	return t, d, nil
}

// recentTransfers reads the 10 most recently applied transfers, newest first.
func recentTransfers(ctx context.Context, db DB) ([]Transfer, error) {
	rows, err := db.Query(ctx, `SELECT transfer_id, from_account, to_account, amount FROM applied_transfers
		WHERE outcome = 'applied' ORDER BY turn DESC LIMIT 10`)
	if err != nil {
		return nil, fmt.Errorf("read recent transfers: %w", err)
	}
	var out []Transfer
	var t Transfer
	if _, err := pgx.ForEachRow(rows, []any{&t.ID, &t.From, &t.To, &t.Amount}, func() error { out = append(out, t); return nil }); err != nil {
		return nil, fmt.Errorf("read recent transfers: %w", err)
	}
	return out, nil
}
