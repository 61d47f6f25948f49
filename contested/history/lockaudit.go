package history

import (
	"fmt"
)

// lockEv is one op of one lock as the audit reads it.
type lockEv struct {
	op     Op
	in     lockIn
	out    lockOut
	done   int64 // when it certainly ended (never when ambiguous)
	gaveUp int64 // when the client stopped waiting
}

// grant is one lease: an acquire answered ok and the ops that name it.
type grant struct {
	acq  *lockEv
	ops  []*lockEv // renew, release and act ops naming this grant, by invoke
	live [][2]int64
}

// Audit implements Auditor: the real-time promises of the lock, per lock.
func (l *Lock) Audit(ops []Op) Audit {
	byKey := map[string][]*lockEv{}
	var keys []string
	for _, i := range sortedByInvoke(ops) {
		op := ops[i]
		t, err := l.Translate(op)
		if err != nil {
			continue // Check translated every op already
		}
		e := &lockEv{op: op, in: t.Input.(lockIn), out: t.Output.(lockOut), done: done(op), gaveUp: gaveUp(op)}
		if _, ok := byKey[e.in.key]; !ok {
			keys = append(keys, e.in.key)
		}
		byKey[e.in.key] = append(byKey[e.in.key], e)
	}
	n := len(ops)
	fencing := newAudit("fencing tokens increase", n)
	exclusive := newAudit("one holder at a time", n)
	noticed := newAudit("a lost lease is noticed before acting", n)
	reacquire := newAudit("an abandoned lock is acquirable again", n)
	for _, k := range keys {
		evs := byKey[k]
		grants := l.grants(evs)
		if l.spec.Fencing {
			l.auditFencing(fencing, k, evs)
		}
		l.auditExclusive(exclusive, k, evs, grants)
		l.auditNoticed(noticed, k, evs, grants)
		if l.spec.Reacquire > 0 {
			l.auditReacquire(reacquire, k, evs)
		}
	}
	var a Audit
	if l.spec.Fencing {
		a.add(fencing)
	}
	a.add(exclusive)
	a.add(noticed)
	if l.spec.Reacquire > 0 {
		a.add(reacquire)
	}
	return a
}

// grants gathers each acquire answered ok with the ops that name it: with Fencing, by token;
// without, the holder's ops until its next acquire.
func (l *Lock) grants(evs []*lockEv) []*grant {
	var out []*grant
	for _, e := range evs {
		if e.in.kind == lockAcquire && e.out.res == resOK {
			out = append(out, &grant{acq: e})
		}
	}
	for _, e := range evs {
		if e.in.kind == lockAcquire {
			continue
		}
		if g := l.grantOf(out, e); g != nil {
			g.ops = append(g.ops, e)
		}
	}
	for _, g := range out {
		g.live = l.certainLife(g)
	}
	return out
}

// grantOf is the grant an op names: the one with its token (Fencing), or else its holder's
// latest grant answered before the op began.
func (l *Lock) grantOf(grants []*grant, e *lockEv) *grant {
	var best *grant
	for _, g := range grants {
		if g.acq.in.holder != e.in.holder {
			continue
		}
		if l.spec.Fencing {
			if g.acq.out.token == e.in.token {
				return g
			}
			continue
		}
		if g.acq.done <= e.op.Invoke && (best == nil || g.acq.done > best.acq.done) {
			best = g
		}
	}
	return best
}

// certainLife is when a grant's lease was certainly held: from its acquire's answer to the
// acquire's invoke plus TTL, and from each renewal's answer to that renewal's invoke plus TTL
// (the service stamps the expiry when it applies the op, which is after the op was sent),
// each cut short by the first release sent (it may have taken effect as soon as it was
// sent). Without a TTL a lease lasts until its first release was sent.
func (l *Lock) certainLife(g *grant) [][2]int64 {
	end := never
	for _, e := range g.ops {
		if e.in.kind == lockRelease && e.out.res != resFailed {
			end = min(end, e.op.Invoke)
		}
	}
	life := func(from, sent int64) [2]int64 {
		to := never
		if l.spec.TTL > 0 {
			to = sent + int64(l.spec.TTL) - int64(l.spec.Slack)
		}
		return [2]int64{from, min(to, end)}
	}
	spans := [][2]int64{life(g.acq.done, g.acq.op.Invoke)}
	for _, e := range g.ops {
		if e.in.kind == lockRenew && e.out.res == resOK {
			spans = append(spans, life(e.done, e.op.Invoke))
		}
	}
	return spans
}

// heldUntil reports whether g's lease was certainly held over all of [from, to], and since
// when and until when (the span that covers it).
func heldOver(g *grant, from, to int64) (bool, [2]int64) {
	for _, s := range g.live {
		if s[0] <= from && to <= s[1] {
			return true, s
		}
	}
	return false, [2]int64{}
}

// auditFencing: an acquire that began after another acquire of the lock ended got a greater
// token; two acquires never got the same token.
func (l *Lock) auditFencing(a *audit, key string, evs []*lockEv) {
	var acqs []*lockEv
	for _, e := range evs {
		if e.in.kind == lockAcquire && e.out.res == resOK {
			acqs = append(acqs, e)
		}
	}
	for i, b := range acqs {
		for _, x := range acqs[:i] {
			switch {
			case x.out.token == b.out.token:
				a.found(fmt.Sprintf("one token granted twice: %s acquired lock %s with token %d at %s, and %s with the same token at %s",
					x.op.Process, key, x.out.token, at(x.done), b.op.Process, at(b.done)), x.op.ID, b.op.ID)
			case x.done < b.op.Invoke && b.out.token < x.out.token:
				a.found(fmt.Sprintf("fencing token went backwards: %s acquired lock %s with token %d at %s, after %s had acquired it with token %d at %s",
					b.op.Process, key, b.out.token, at(b.done), x.op.Process, x.out.token, at(x.done)), b.op.ID, x.op.ID)
			}
		}
	}
}

// auditExclusive: no acquire answered ok to another holder fell inside a lease's certain
// life.
func (l *Lock) auditExclusive(a *audit, key string, evs []*lockEv, grants []*grant) {
	for _, b := range grants {
		for _, g := range grants {
			if g == b || g.acq.in.holder == b.acq.in.holder {
				continue
			}
			held, life := heldOver(g, b.acq.op.Invoke, b.acq.done)
			if !held {
				continue
			}
			until := "and had not released it"
			if life[1] != never {
				until = "its lease was good until at least " + at(life[1])
			}
			a.found(fmt.Sprintf("two holders: %s acquired lock %s at %s (%s) while %s held it since %s (%s; %s)",
				b.acq.op.Process, key, at(b.acq.done), tokenPhrase(b.acq.out.token), g.acq.op.Process, at(g.acq.done), tokenPhrase(g.acq.out.token), until),
				b.acq.op.ID, g.acq.op.ID)
		}
	}
}

func tokenPhrase(t int64) string {
	if t == 0 {
		return "no token"
	}
	return fmt.Sprintf("token %d", t)
}

// auditNoticed: no act or renew answered ok began after its lease was superseded by another
// holder's grant, after the holder was told the lease was lost, after it released it, or
// (RecordsRenewals) after the lease could have lasted.
func (l *Lock) auditNoticed(a *audit, key string, evs []*lockEv, grants []*grant) {
	for _, g := range grants {
		for _, x := range g.ops {
			if x.out.res != resOK || x.in.kind == lockRelease {
				continue
			}
			verb := "acted on"
			if x.in.kind == lockRenew {
				verb = "renewed"
			}
			if why, ids := l.lostBefore(g, x, grants); why != "" {
				a.found(fmt.Sprintf("acted after loss: %s %s lock %s under %s at %s, %s",
					x.op.Process, verb, key, tokenPhrase(x.in.token), at(x.op.Invoke), why), append([]int64{x.op.ID}, ids...)...)
			}
		}
	}
}

// lostBefore says why g's lease was certainly lost before op x began, or "".
func (l *Lock) lostBefore(g *grant, x *lockEv, grants []*grant) (string, []int64) {
	for _, b := range grants {
		if b == g || b.acq.done >= x.op.Invoke {
			continue
		}
		newer := b.acq.op.Invoke > g.acq.done && b.acq.in.holder != g.acq.in.holder
		if l.spec.Fencing {
			newer = b.acq.out.token > g.acq.out.token
		}
		if newer {
			return fmt.Sprintf("after %s had acquired it (%s) at %s", b.acq.op.Process, tokenPhrase(b.acq.out.token), at(b.acq.done)), []int64{b.acq.op.ID}
		}
	}
	for _, y := range g.ops {
		if y.done >= x.op.Invoke {
			continue
		}
		switch {
		case y.out.res == resFenced:
			return fmt.Sprintf("after it had been told at %s that the lease was lost (%s answered fenced)", at(y.done), y.op.Type), []int64{y.op.ID}
		case y.in.kind == lockRelease && y.out.res == resOK:
			return fmt.Sprintf("after it had released it at %s", at(y.done)), []int64{y.op.ID}
		}
	}
	if l.spec.RecordsRenewals && l.spec.TTL > 0 {
		last, lastOp := g.acq.done, g.acq.op.ID
		for _, y := range g.ops {
			if y.in.kind == lockRenew && y.out.res != resFailed && y.out.res != resFenced && y.op.Invoke < x.op.Invoke {
				if t := l.tookEffectBy(y); t > last {
					last, lastOp = t, y.op.ID
				}
			}
		}
		if last != never && x.op.Invoke > last+int64(l.spec.TTL)+int64(l.spec.Slack) {
			return fmt.Sprintf("after its lease had run out by %s at the latest (its last renewal or grant took effect by %s; TTL %s)",
				at(last+int64(l.spec.TTL)), at(last), l.spec.TTL), []int64{lastOp}
		}
	}
	return "", nil
}

// tookEffectBy is when op e took effect at the latest, if it did: its answer, or for one whose
// answer was lost, when its client gave up plus EffectWithin (never without the bound).
func (l *Lock) tookEffectBy(e *lockEv) int64 {
	switch {
	case e.out.res != resUnknown:
		return e.done
	case l.spec.EffectWithin > 0 && e.gaveUp != never:
		return e.gaveUp + int64(l.spec.EffectWithin)
	}
	return never
}

// auditReacquire: an acquire answered busy began no later than TTL + Reacquire after the last
// sign of life of any holder of the lock: an acquire or renewal that took effect (answered ok,
// or lost and bounded by EffectWithin), or, when renewals are hidden, an act answered ok.
func (l *Lock) auditReacquire(a *audit, key string, evs []*lockEv) {
	bound := int64(l.spec.TTL + l.spec.Reacquire + l.spec.Slack)
	// The ops are in invoke order, so the last sign of life before each busy answer is a
	// running maximum (capped at the answer's invoke: max of min is min of max).
	latest, who := int64(-1), (*lockEv)(nil)
	for _, b := range evs {
		if b.in.kind == lockAcquire && b.out.res == resBusy && who != nil {
			if last := min(latest, b.op.Invoke); b.op.Invoke > last+bound {
				l.abandoned(a, key, b, who, last)
			}
		}
		alive := b.in.kind == lockAcquire || b.in.kind == lockRenew || (b.in.kind == lockAct && !l.spec.RecordsRenewals && b.out.res == resOK)
		if alive && (b.out.res == resOK || b.out.res == resUnknown) {
			if t := l.tookEffectBy(b); t > latest {
				latest, who = t, b
			}
		}
	}
}

// abandoned reports busy answer b, given too long after the last sign of life (who, at last).
func (l *Lock) abandoned(a *audit, key string, b, who *lockEv, last int64) {
	a.found(fmt.Sprintf("abandoned lock not acquirable: %s was told lock %s is busy at %s, %s after the last sign of life of any holder (%s, %s op %d, at %s); TTL %s, bound %s",
		b.op.Process, key, at(b.op.Invoke), span(b.op.Invoke-last), who.op.Process, who.op.Type, who.op.ID, at(last), l.spec.TTL, l.spec.Reacquire),
		b.op.ID, who.op.ID)
}
