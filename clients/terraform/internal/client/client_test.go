package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func TestValidationProblemKeepsItsFields(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"type": "https://jobsched.dev/problems/validation-error", "title": "Bad Request",
			"status": 400, "detail": "schedule.cron: bad", "errors": {"schedule.cron": ["bad"], "http.url": ["no"]}}`))
	}))
	defer server.Close()
	api, _ := New(server.URL, "t", "test")
	_, err := api.CreateTask(context.Background(), TaskInput{Name: "x"})
	var problem *Problem
	if !errors.As(err, &problem) {
		t.Fatalf("want a *Problem, got %v", err)
	}
	if problem.Slug() != "validation-error" || problem.Errors["schedule.cron"][0] != "bad" || problem.Errors["http.url"][0] != "no" {
		t.Fatalf("problem not read whole: %+v", problem)
	}
}

func TestStaleETagIsA412(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Match") != `"3"` {
			t.Errorf("If-Match %q, want the ETag given", r.Header.Get("If-Match"))
		}
		w.WriteHeader(http.StatusPreconditionFailed)
		_, _ = w.Write([]byte(`{"status": 412, "detail": "The task changed since you read it; GET it again.", "current_etag": "\"4\""}`))
	}))
	defer server.Close()
	api, _ := New(server.URL+"/v1/", "t", "test")
	_, err := api.UpdateTask(context.Background(), "id", `"3"`, TaskInput{})
	if !IsStale(err) {
		t.Fatalf("want IsStale, got %v", err)
	}
}

func TestThrottledCallIsRetriedAfterRetryAfter(t *testing.T) {
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("ETag", `"1"`)
		_, _ = w.Write([]byte(`{"id": "abc", "version": 1}`))
	}))
	defer server.Close()
	api, _ := New(server.URL, "t", "test")
	task, err := api.GetTask(context.Background(), "abc")
	if err != nil || task.ETag != `"1"` || calls.Load() != 2 {
		t.Fatalf("task %+v, err %v, calls %d", task, err, calls.Load())
	}
}

func TestCreateSendsAnIdempotencyKeyAndTheSameOneOnRetry(t *testing.T) {
	var keys []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if len(keys) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": "abc", "version": 1}`))
	}))
	defer server.Close()
	api, _ := New(server.URL, "t", "test")
	if _, err := api.CreateTask(context.Background(), TaskInput{Name: "x"}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("Idempotency-Key per attempt: %q", keys)
	}
}

func TestNoAnswerIsUnreachable(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	api, _ := New("http://"+address, "t", "test")
	api.retryDelay = time.Millisecond
	err = api.Ping(context.Background())
	var unreachable *UnreachableError
	if !errors.As(err, &unreachable) {
		t.Fatalf("want UnreachableError, got %v", err)
	}
}

func TestEndpointMustBeHTTP(t *testing.T) {
	for _, endpoint := range []string{"", "ftp://x", "127.0.0.1:8000", "http://"} {
		if _, err := New(endpoint, "t", "test"); err == nil {
			t.Errorf("%q accepted", endpoint)
		}
	}
	api, err := New("https://jobsched.example.com/v1/", "t", "test")
	if err != nil || api.Endpoint() != "https://jobsched.example.com" {
		t.Fatalf("endpoint %q, err %v", api.Endpoint(), err)
	}
}
