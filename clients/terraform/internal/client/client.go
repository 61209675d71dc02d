// Package client speaks the jobsched tenant API (/v1): tasks, secrets and signing secrets.
//
// It owns the wire details the provider must not repeat: the bearer token, problem+json
// errors, ETags and If-Match, Idempotency-Key on create, and waiting out a 429.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxThrottleWaits bounds how often one call waits out a 429 (the tenant's rate) before failing.
const maxThrottleWaits = 5

// Client is one tenant's view of a jobsched API.
type Client struct {
	base      string // e.g. http://127.0.0.1:8000, without /v1
	token     string
	http      *http.Client
	userAgent string
	// retryDelay is the pause before re-sending a request that got no answer (then twice that).
	retryDelay time.Duration
}

// New returns a client for the API at endpoint (the server's root; a trailing /v1 is accepted).
func New(endpoint, token, userAgent string) (*Client, error) {
	parsed, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return nil, fmt.Errorf("endpoint %q is not an http(s) URL", endpoint)
	}
	base := strings.TrimSuffix(strings.TrimSuffix(parsed.String(), "/"), "/v1")
	return &Client{
		base:       base,
		token:      token,
		http:       &http.Client{Timeout: 60 * time.Second},
		userAgent:  userAgent,
		retryDelay: time.Second,
	}, nil
}

// Endpoint is the server root the client talks to.
func (c *Client) Endpoint() string { return c.base }

// Problem is an RFC 9457 answer from the API; Errors maps a field ("schedule.cron") to its messages.
type Problem struct {
	Status      int                 `json:"status"`
	Type        string              `json:"type"`
	Title       string              `json:"title"`
	Detail      string              `json:"detail"`
	Errors      map[string][]string `json:"errors"`
	CurrentETag string              `json:"current_etag"`
	Method      string              `json:"-"`
	Path        string              `json:"-"`
}

func (p *Problem) Error() string {
	detail := p.Detail
	if detail == "" {
		detail = p.Title
	}
	return fmt.Sprintf("%s %s: %d %s", p.Method, p.Path, p.Status, detail)
}

// Slug is the problem type's last segment ("validation-error", "precondition-failed").
func (p *Problem) Slug() string {
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}

// UnreachableError is a request that got no HTTP answer at all.
type UnreachableError struct {
	Endpoint string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the jobsched API at %s: %v", e.Endpoint, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsStatus tells whether err is a problem with this HTTP status.
func IsStatus(err error, status int) bool {
	var problem *Problem
	return errors.As(err, &problem) && problem.Status == status
}

// IsNotFound tells whether err is the API's 404 (missing, deleted or another tenant's).
func IsNotFound(err error) bool { return IsStatus(err, http.StatusNotFound) }

type request struct {
	method  string
	path    string
	body    any
	headers map[string]string
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request; a 429 is waited out (Retry-After, bounded), and a POST that got no
// answer is re-sent only when it carries an Idempotency-Key (the API then answers the first one).
func (c *Client) do(ctx context.Context, req request, out any) (*response, error) {
	var payload []byte
	if req.body != nil {
		var err error
		if payload, err = json.Marshal(req.body); err != nil {
			return nil, err
		}
	}
	retryable := req.method != http.MethodPost || req.headers["Idempotency-Key"] != ""
	for attempt := 0; ; attempt++ {
		resp, err := c.send(ctx, req, payload)
		if err != nil {
			if retryable && attempt < 2 && ctx.Err() == nil {
				if sleep(ctx, time.Duration(attempt+1)*c.retryDelay) == nil {
					continue
				}
			}
			return nil, &UnreachableError{Endpoint: c.base, Err: err}
		}
		if resp.status == http.StatusTooManyRequests && attempt < maxThrottleWaits {
			if sleep(ctx, retryAfter(resp.header)) == nil {
				continue
			}
		}
		if resp.status >= 400 {
			return resp, problemOf(req, resp)
		}
		if out != nil && len(resp.body) > 0 {
			if err := json.Unmarshal(resp.body, out); err != nil {
				return resp, fmt.Errorf("%s %s: unreadable answer: %w", req.method, req.path, err)
			}
		}
		return resp, nil
	}
}

func (c *Client) send(ctx context.Context, req request, payload []byte) (*response, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, body)
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Authorization", "Bearer "+c.token)
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("User-Agent", c.userAgent)
	if payload != nil {
		httpReq.Header.Set("Content-Type", "application/json")
	}
	for name, value := range req.headers {
		httpReq.Header.Set(name, value)
	}
	httpResp, err := c.http.Do(httpReq)
	if err != nil {
		return nil, err
	}
	defer httpResp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(httpResp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	return &response{status: httpResp.StatusCode, header: httpResp.Header, body: data}, nil
}

func problemOf(req request, resp *response) error {
	problem := &Problem{Status: resp.status, Method: req.method, Path: req.path}
	if json.Unmarshal(resp.body, problem) != nil || problem.Status == 0 {
		problem.Status = resp.status
		problem.Detail = strings.TrimSpace(string(resp.body))
		if len(problem.Detail) > 300 {
			problem.Detail = problem.Detail[:300] + "..."
		}
		if problem.Detail == "" {
			problem.Detail = http.StatusText(resp.status)
		}
	}
	return problem
}

func retryAfter(header http.Header) time.Duration {
	seconds, err := strconv.Atoi(header.Get("Retry-After"))
	if err != nil || seconds < 1 {
		return time.Second
	}
	if seconds > 60 {
		seconds = 60
	}
	return time.Duration(seconds) * time.Second
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// newIdempotencyKey names one create, so a re-sent POST answers the task the first one made.
func newIdempotencyKey() string {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "terraform-" + hex.EncodeToString(raw[:])
}

// Ping checks that the API answers and accepts the token (one cheap authenticated read).
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/tasks?limit=1"}, nil)
	return err
}
