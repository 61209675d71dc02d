package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// DateRange is a calendar's span of local dates, both ends included (YYYY-MM-DD).
type DateRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// CalendarInput is a whole calendar as PUT takes it.
type CalendarInput struct {
	Timezone string      `json:"timezone"`
	Dates    []string    `json:"dates"`
	Ranges   []DateRange `json:"ranges"`
}

// Calendar is the API's calendar JSON; ETag comes from the answer's header.
type Calendar struct {
	Name      string      `json:"name"`
	Timezone  string      `json:"timezone"`
	Dates     []string    `json:"dates"`
	Ranges    []DateRange `json:"ranges"`
	Version   int64       `json:"version"`
	CreatedAt string      `json:"created_at"`
	UpdatedAt string      `json:"updated_at"`
	ETag      string      `json:"-"`
}

func calendarPath(name string) string { return "/v1/calendars/" + url.PathEscape(name) }

func (c *Client) calendarCall(ctx context.Context, req request) (*Calendar, error) {
	var calendar Calendar
	resp, err := c.do(ctx, req, &calendar)
	if err != nil {
		return nil, err
	}
	calendar.ETag = resp.header.Get("ETag")
	if calendar.ETag == "" {
		calendar.ETag = strconv.Quote(strconv.FormatInt(calendar.Version, 10))
	}
	return &calendar, nil
}

// PutCalendar creates or replaces the calendar; with etag, only if it is still at that version (else IsStale).
func (c *Client) PutCalendar(ctx context.Context, name, etag string, input CalendarInput) (*Calendar, error) {
	headers := map[string]string{}
	if etag != "" {
		headers["If-Match"] = etag
	}
	return c.calendarCall(ctx, request{method: http.MethodPut, path: calendarPath(name), body: input, headers: headers})
}

func (c *Client) GetCalendar(ctx context.Context, name string) (*Calendar, error) {
	return c.calendarCall(ctx, request{method: http.MethodGet, path: calendarPath(name)})
}

// DeleteCalendar deletes it; the API refuses (409) while a task excludes it.
func (c *Client) DeleteCalendar(ctx context.Context, name string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: calendarPath(name)}, nil)
	return err
}
