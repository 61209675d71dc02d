package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Schedule is a cron with its zone, an interval (every, from anchor), or a one-shot's run_at
// (times RFC 3339 with an offset), with the bounds and the window every kind may carry.
type Schedule struct {
	Cron             *string  `json:"cron,omitempty"`
	Timezone         *string  `json:"timezone,omitempty"`
	RunAt            *string  `json:"run_at,omitempty"`
	Every            *string  `json:"every,omitempty"`
	Anchor           *string  `json:"anchor,omitempty"`
	WindowSeconds    *int64   `json:"window_seconds,omitempty"`
	StartsAt         *string  `json:"starts_at,omitempty"`
	EndsAt           *string  `json:"ends_at,omitempty"`
	MaxRuns          *int64   `json:"max_runs,omitempty"`
	ExcludeCalendars []string `json:"exclude_calendars,omitempty"`
}

// HTTPCall is the request a task sends.
type HTTPCall struct {
	URL     string            `json:"url"`
	Method  string            `json:"method,omitempty"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// TaskInput is a whole task as sent on create and (as a merge patch of every field) on update.
// SecretRef and AutoPauseAfter are sent as null when nil: null is their meaning ("none", "the
// service default"), and a merge patch that left them out would keep the old value. Labels merge
// key by key on update (RFC 7396): a nil value removes that key, a key left out is kept.
type TaskInput struct {
	Name                  string             `json:"name"`
	Schedule              Schedule           `json:"schedule"`
	HTTP                  HTTPCall           `json:"http"`
	TimeoutSeconds        *int64             `json:"timeout_seconds,omitempty"`
	MaxAttempts           *int64             `json:"max_attempts,omitempty"`
	BackoffBaseSeconds    *int64             `json:"backoff_base_seconds,omitempty"`
	Priority              *int64             `json:"priority,omitempty"`
	SecretRef             *string            `json:"secret_ref"`
	MissedRuns            *string            `json:"missed_runs,omitempty"`
	AutoPauseAfter        *int64             `json:"auto_pause_after"`
	Labels                map[string]*string `json:"labels,omitempty"`
	Overlap               *string            `json:"overlap,omitempty"`
	DeleteAfterCompletion *bool              `json:"delete_after_completion,omitempty"`
}

// LastRun is the latest attempt's result.
type LastRun struct {
	JobID       string `json:"job_id"`
	ScheduledAt string `json:"scheduled_at"`
	Status      string `json:"status"`
	HTTPStatus  *int64 `json:"http_status"`
	At          string `json:"at"`
}

// Task is the API's task JSON; ETag comes from the answer's header.
type Task struct {
	ID                    string            `json:"id"`
	Name                  string            `json:"name"`
	Status                string            `json:"status"`
	Version               int64             `json:"version"`
	Schedule              Schedule          `json:"schedule"`
	HTTP                  HTTPCall          `json:"http"`
	TimeoutSeconds        int64             `json:"timeout_seconds"`
	MaxAttempts           int64             `json:"max_attempts"`
	BackoffBaseSeconds    int64             `json:"backoff_base_seconds"`
	Priority              int64             `json:"priority"`
	SecretRef             *string           `json:"secret_ref"`
	MissedRuns            string            `json:"missed_runs"`
	AutoPauseAfter        *int64            `json:"auto_pause_after"`
	PausedReason          *string           `json:"paused_reason"`
	ConsecutiveFailures   int64             `json:"consecutive_failures"`
	LastRun               *LastRun          `json:"last_run"`
	NextRunAt             *string           `json:"next_run_at"`
	CreatedAt             string            `json:"created_at"`
	UpdatedAt             string            `json:"updated_at"`
	Labels                map[string]string `json:"labels"`
	Overlap               string            `json:"overlap"`
	DeleteAfterCompletion bool              `json:"delete_after_completion"`
	RunsScheduled         *int64            `json:"runs_scheduled"`
	ETag                  string            `json:"-"`
}

func taskPath(id string) string { return "/v1/tasks/" + url.PathEscape(id) }

func (c *Client) taskCall(ctx context.Context, req request) (*Task, error) {
	var task Task
	resp, err := c.do(ctx, req, &task)
	if err != nil {
		return nil, err
	}
	task.ETag = resp.header.Get("ETag")
	if task.ETag == "" {
		task.ETag = strconv.Quote(strconv.FormatInt(task.Version, 10))
	}
	return &task, nil
}

// CreateTask creates a task under a fresh Idempotency-Key, so a re-sent POST makes no second task.
func (c *Client) CreateTask(ctx context.Context, input TaskInput) (*Task, error) {
	return c.taskCall(ctx, request{
		method: http.MethodPost, path: "/v1/tasks", body: input,
		headers: map[string]string{"Idempotency-Key": newIdempotencyKey()},
	})
}

// GetTask reads one task (a 404 for a missing, deleted or another tenant's task).
func (c *Client) GetTask(ctx context.Context, id string) (*Task, error) {
	return c.taskCall(ctx, request{method: http.MethodGet, path: taskPath(id)})
}

// UpdateTask merge-patches the task if it is still at etag; else the API's 412 (IsStale).
func (c *Client) UpdateTask(ctx context.Context, id, etag string, input TaskInput) (*Task, error) {
	return c.taskCall(ctx, request{
		method: http.MethodPatch, path: taskPath(id), body: input,
		headers: map[string]string{"If-Match": etag},
	})
}

// PauseTask and ResumeTask are idempotent on the server (pausing a paused task changes nothing).
func (c *Client) PauseTask(ctx context.Context, id string) (*Task, error) {
	return c.taskCall(ctx, request{method: http.MethodPost, path: taskPath(id) + "/pause"})
}

func (c *Client) ResumeTask(ctx context.Context, id string) (*Task, error) {
	return c.taskCall(ctx, request{method: http.MethodPost, path: taskPath(id) + "/resume"})
}

// DeleteTask deletes the task if it is still at etag (empty: unconditionally).
func (c *Client) DeleteTask(ctx context.Context, id, etag string) error {
	headers := map[string]string{}
	if etag != "" {
		headers["If-Match"] = etag
	}
	_, err := c.do(ctx, request{method: http.MethodDelete, path: taskPath(id), headers: headers}, nil)
	return err
}

// IsStale tells whether err is the API's 412: the task changed since its ETag was read.
func IsStale(err error) bool { return IsStatus(err, http.StatusPreconditionFailed) }

// maxTaskPages bounds a listing walk (200 tasks a page: 100,000 tasks).
const maxTaskPages = 500

// labelQuery is the API's label selector: `&label=key=value` for each, all of which must hold.
func labelQuery(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for key := range labels {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var query strings.Builder
	for _, key := range keys {
		query.WriteString("&label=" + url.QueryEscape(key+"="+labels[key]))
	}
	return query.String()
}

// ListTasks walks every page of the tenant's tasks carrying all of labels (the API filters),
// newest first, keeping those keep accepts.
func (c *Client) ListTasks(ctx context.Context, labels map[string]string, keep func(*Task) bool) ([]Task, error) {
	var out []Task
	cursor := ""
	for page := 0; page < maxTaskPages; page++ {
		path := "/v1/tasks?limit=200" + labelQuery(labels)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var body struct {
			Results    []Task  `json:"results"`
			NextCursor *string `json:"next_cursor"`
		}
		if _, err := c.do(ctx, request{method: http.MethodGet, path: path}, &body); err != nil {
			return nil, err
		}
		for i := range body.Results {
			task := body.Results[i]
			task.ETag = strconv.Quote(strconv.FormatInt(task.Version, 10))
			if keep == nil || keep(&task) {
				out = append(out, task)
			}
		}
		if body.NextCursor == nil || strings.TrimSpace(*body.NextCursor) == "" {
			return out, nil
		}
		cursor = *body.NextCursor
	}
	return nil, fmt.Errorf("more than %d pages of tasks; narrow the listing", maxTaskPages)
}
