package degraded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/contested/contested/internal/capability"
)

// ErrNoBrowser reports that no Chromium could be found; the error says so
// in the capability matrix's words (capability.ErrMissing), with the
// command that provides it.
var ErrNoBrowser = errors.New("no Chromium found")

// FindBrowser returns the Chromium to drive: path when it is given, else
// the first of chromium, chromium-browser, google-chrome on PATH.
func FindBrowser(path string) (string, error) {
	p, err := capability.FindChromium(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoBrowser, err)
	}
	return p, nil
}

// browser is one headless Chromium; each cell opens a tab of its own.
type browser struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// startBrowser starts a headless Chromium with a profile in dir. chromedp
// starts it with Pdeathsig, so it dies with this process.
func startBrowser(ctx context.Context, path, dir string) (*browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1024, 768),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run its sandbox as root (CI containers).
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// The first Run starts the browser; it lives as long as bctx.
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		return nil, fmt.Errorf("start Chromium %s: %w", path, err)
	}
	return &browser{ctx: bctx, cancel: func() { bcancel(); acancel() }}, nil
}

func (b *browser) close() { b.cancel() }

// tab opens a new tab, bounded by d. The tab exists when it returns, so
// that the time a page takes never counts the tab's creation.
func (b *browser) tab(d time.Duration) (context.Context, context.CancelFunc, error) {
	tctx, tcancel := chromedp.NewContext(b.ctx)
	ctx, cancel := context.WithTimeout(tctx, d)
	stop := func() { cancel(); tcancel() }
	if err := chromedp.Do(ctx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("open a tab: %w", err)
	}
	return ctx, stop, nil
}

// View is what the user saw on one page: the document's HTTP status, how
// long it took, and the page contract's elements.
type View struct {
	Status  int64         `json:"status"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Banner is #banner's data-state ("" when there is no banner).
	Banner string `json:"banner"`
	// Outcome and Key are #outcome's data-outcome and data-key ("" when
	// the page has none).
	Outcome string `json:"outcome,omitempty"`
	Key     string `json:"key,omitempty"`
	// Rows counts the balances table's account rows.
	Rows int `json:"rows"`
	// FormKey is the transfer form's idempotency key ("" without a form).
	FormKey string `json:"form_key,omitempty"`
	// Text is the start of the page's text, for the evidence.
	Text string `json:"text,omitempty"`
	// Err is why the page could not be read ("" when it was).
	Err string `json:"error,omitempty"`
}

// String is the view as victim evidence.
func (v View) String() string {
	if v.Err != "" {
		return fmt.Sprintf("browser: %s after %s", v.Err, v.Elapsed.Round(time.Millisecond))
	}
	s := fmt.Sprintf("browser: HTTP %d in %s, banner %q", v.Status, v.Elapsed.Round(time.Millisecond), v.Banner)
	if v.Outcome != "" {
		s += fmt.Sprintf(", outcome %q", v.Outcome)
	}
	return s
}

// readPage is the script that reads the page contract's elements.
const readPage = `JSON.stringify((() => {
  const b = document.querySelector('#banner');
  const o = document.querySelector('#outcome');
  const k = document.querySelector('#transfer-form input[name=key]');
  return {
    banner: b ? (b.dataset.state || '') : '',
    outcome: o ? (o.dataset.outcome || '') : '',
    key: o ? (o.dataset.key || '') : '',
    rows: document.querySelectorAll('#balances tr[data-account]').length,
    form_key: k ? k.value : '',
    text: (document.body ? document.body.innerText : '').slice(0, 200),
  };
})())`

// look reads the current page into v.
func look(ctx context.Context, v *View) {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](readPage))
	if err != nil {
		v.Err = "read the page: " + err.Error()
		return
	}
	var got struct {
		Banner, Outcome, Key, Text string
		Rows                       int
		FormKey                    string `json:"form_key"`
	}
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		v.Err = "read the page: " + err.Error()
		return
	}
	v.Banner, v.Outcome, v.Key, v.Rows, v.FormKey = got.Banner, got.Outcome, got.Key, got.Rows, got.FormKey
	v.Text = strings.Join(strings.Fields(got.Text), " ")
}

// navigate loads url in the tab and reads what the user sees.
func navigate(ctx context.Context, url string) View {
	start := time.Now()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	v := View{Elapsed: time.Since(start)}
	if err != nil {
		v.Err = "load " + url + ": " + err.Error()
		return v
	}
	if resp != nil {
		v.Status = resp.Status
	}
	look(ctx, &v)
	return v
}

// submit fills the transfer form and clicks its button.
func submit(ctx context.Context, from, to string, amount int64) View {
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#transfer-form [name=from]`), from),
		chromedp.SetValue(chromedp.CSS(`#transfer-form [name=to]`), to),
		chromedp.SetValue(chromedp.CSS(`#transfer-form [name=amount]`), fmt.Sprint(amount)),
	); err != nil {
		return View{Err: "fill the transfer form: " + err.Error()}
	}
	start := time.Now()
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#submit`)))
	v := View{Elapsed: time.Since(start)}
	if err != nil {
		v.Err = "submit the transfer form: " + err.Error()
		return v
	}
	if resp != nil {
		v.Status = resp.Status
	}
	look(ctx, &v)
	return v
}

// repost sends the form the user submitted again, with the same fields and
// the same key: what a reload of the answer page does.
func repost(ctx context.Context, base, key, from, to string, amount int64) View {
	js := fmt.Sprintf(`(() => {
  const f = document.createElement('form');
  f.method = 'post'; f.action = %q;
  for (const [n, v] of Object.entries({from: %q, to: %q, amount: %q, key: %q})) {
    const i = document.createElement('input'); i.type = 'hidden'; i.name = n; i.value = v; f.appendChild(i);
  }
  document.documentElement.appendChild(f);
  f.submit();
  return true;
})()`, base+"/transfer", from, to, fmt.Sprint(amount), key)
	start := time.Now()
	resp, err := chromedp.RunResponse(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](js)(ctx, t)
		return err
	}))
	v := View{Elapsed: time.Since(start)}
	if err != nil {
		v.Err = "reload (re-post the form): " + err.Error()
		return v
	}
	if resp != nil {
		v.Status = resp.Status
	}
	look(ctx, &v)
	return v
}

// screenshot captures the tab's viewport as PNG.
func screenshot(ctx context.Context) ([]byte, error) {
	return chromedp.Run(ctx, chromedp.CaptureScreenshot())
}
