// Package degraded is the degraded-UX stage (go tool mage degraded): a
// service's web front, recreated with its database routed through a
// standing Toxiproxy pass-through of the fault layer, walked by a real
// headless Chromium through a matrix of flows (load the page, submit a
// transfer, reload after submitting) under conditions (backend down,
// latency above the page's timeout, connection reset mid-submit, pool
// exhausted).
//
// Each cell asserts what the user sees (a banner or an outcome, never a
// 5xx page, an answer within the front's bound) and what the database
// holds afterwards (a confirmed transfer is applied exactly once, a
// refused one not at all, a pending one at most once, and no money moves
// under another key). Each cell is one fault record of class ux, with the
// injector's evidence (the proxy or toxic read back from Toxiproxy, the
// database at its connection limit) and the victim's (what the browser
// saw), so the gate counts the stage like any other leg.
//
// Lifecycle: the stage holds the fault layer's stage lock end to end
// (faultlayer.HoldStage), so layer down, layer up and validate wait for
// it. Before it reroutes anything it writes a marker (overlay.json under
// the results directory's degraded/); a clean end removes it. The next
// stage (or validate) that finds a marker restores the base shape first:
// the marker's proxies deleted, its front stopped, the marker cleared;
// when the layer is down the marker is simply cleared; a restore that
// fails leaves the marker for a retry and says how to escape by hand.
package degraded
