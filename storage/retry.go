package storage

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of transient failures (connection refused
// or reset, timeouts, 5xx, throttling): Attempts tries in all, waiting an
// exponentially growing, jittered delay between BaseDelay and MaxDelay.
type RetryPolicy struct {
	Attempts  int           // tries in all, the first included; 0 means 4, 1 disables retries
	BaseDelay time.Duration // delay before the first retry; 0 means 200 ms
	MaxDelay  time.Duration // cap on one delay; 0 means 5 s
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 200 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 5 * time.Second
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	return p
}

// delay is the wait after the given failed attempt (1-based): "equal
// jitter", half fixed and half random, so retries of many clients spread
// out but never collapse to zero.
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// do runs op until it succeeds, fails with a non-transient error, the
// attempts run out or ctx ends. Each attempt gets its own timeout when
// timeout > 0, ending its context with a callTimeoutError; op's error is
// then not transient (see ctxErr), so the call fails after one timeout
// rather than Attempts of them.
func (p RetryPolicy) do(ctx context.Context, log *slog.Logger, what string, timeout time.Duration, op func(ctx context.Context) error) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = withCallTimeout(ctx, timeout)
		}
		err := op(actx)
		cancel()
		if err == nil || !isTransient(err) || attempt >= p.Attempts || ctx.Err() != nil {
			return err
		}
		wait := p.delay(attempt)
		log.Info("store call failed, retrying", "call", what, "attempt", attempt, "of", p.Attempts, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
