package provider

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// taskModel is the task as Terraform holds it: the API's JSON, plus paused and etag.
type taskModel struct {
	ID                    types.String   `tfsdk:"id"`
	Name                  types.String   `tfsdk:"name"`
	Schedule              *scheduleModel `tfsdk:"schedule"`
	HTTP                  *httpModel     `tfsdk:"http"`
	TimeoutSeconds        types.Int64    `tfsdk:"timeout_seconds"`
	MaxAttempts           types.Int64    `tfsdk:"max_attempts"`
	BackoffBaseSeconds    types.Int64    `tfsdk:"backoff_base_seconds"`
	Priority              types.Int64    `tfsdk:"priority"`
	SecretRef             types.String   `tfsdk:"secret_ref"`
	MissedRuns            types.String   `tfsdk:"missed_runs"`
	AutoPauseAfter        types.Int64    `tfsdk:"auto_pause_after"`
	Labels                types.Map      `tfsdk:"labels"`
	Overlap               types.String   `tfsdk:"overlap"`
	DeleteAfterCompletion types.Bool     `tfsdk:"delete_after_completion"`
	RunsScheduled         types.Int64    `tfsdk:"runs_scheduled"`
	Paused                types.Bool     `tfsdk:"paused"`
	Status                types.String   `tfsdk:"status"`
	PausedReason          types.String   `tfsdk:"paused_reason"`
	ConsecutiveFailures   types.Int64    `tfsdk:"consecutive_failures"`
	Version               types.Int64    `tfsdk:"version"`
	ETag                  types.String   `tfsdk:"etag"`
	NextRunAt             types.String   `tfsdk:"next_run_at"`
	CreatedAt             types.String   `tfsdk:"created_at"`
	UpdatedAt             types.String   `tfsdk:"updated_at"`
}

type scheduleModel struct {
	Cron             types.String `tfsdk:"cron"`
	Timezone         types.String `tfsdk:"timezone"`
	RunAt            types.String `tfsdk:"run_at"`
	Every            types.String `tfsdk:"every"`
	Anchor           types.String `tfsdk:"anchor"`
	WindowSeconds    types.Int64  `tfsdk:"window_seconds"`
	StartsAt         types.String `tfsdk:"starts_at"`
	EndsAt           types.String `tfsdk:"ends_at"`
	MaxRuns          types.Int64  `tfsdk:"max_runs"`
	ExcludeCalendars types.List   `tfsdk:"exclude_calendars"`
}

type httpModel struct {
	URL     types.String `tfsdk:"url"`
	Method  types.String `tfsdk:"method"`
	Headers types.Map    `tfsdk:"headers"`
	Body    types.String `tfsdk:"body"`
}

// input is the task as the API takes it; unknown (server-chosen) values are left out.
func (m *taskModel) input(ctx context.Context) (client.TaskInput, diag.Diagnostics) {
	var diags diag.Diagnostics
	headers := map[string]string{}
	if !m.HTTP.Headers.IsNull() && !m.HTTP.Headers.IsUnknown() {
		diags.Append(m.HTTP.Headers.ElementsAs(ctx, &headers, false)...)
	}
	var labels map[string]*string
	if !m.Labels.IsNull() && !m.Labels.IsUnknown() {
		diags.Append(m.Labels.ElementsAs(ctx, &labels, false)...)
	}
	calendars := []string{}
	if !m.Schedule.ExcludeCalendars.IsNull() && !m.Schedule.ExcludeCalendars.IsUnknown() {
		diags.Append(m.Schedule.ExcludeCalendars.ElementsAs(ctx, &calendars, false)...)
	}
	input := client.TaskInput{
		Name: m.Name.ValueString(),
		Schedule: client.Schedule{
			Cron:             knownString(m.Schedule.Cron),
			Timezone:         knownString(m.Schedule.Timezone),
			RunAt:            knownString(m.Schedule.RunAt),
			Every:            knownString(m.Schedule.Every),
			Anchor:           knownString(m.Schedule.Anchor),
			WindowSeconds:    knownInt(m.Schedule.WindowSeconds),
			StartsAt:         knownString(m.Schedule.StartsAt),
			EndsAt:           knownString(m.Schedule.EndsAt),
			MaxRuns:          knownInt(m.Schedule.MaxRuns),
			ExcludeCalendars: calendars,
		},
		HTTP: client.HTTPCall{
			URL:     m.HTTP.URL.ValueString(),
			Method:  m.HTTP.Method.ValueString(),
			Headers: headers,
			Body:    m.HTTP.Body.ValueString(),
		},
		TimeoutSeconds:        knownInt(m.TimeoutSeconds),
		MaxAttempts:           knownInt(m.MaxAttempts),
		BackoffBaseSeconds:    knownInt(m.BackoffBaseSeconds),
		Priority:              knownInt(m.Priority),
		SecretRef:             knownString(m.SecretRef),
		MissedRuns:            knownString(m.MissedRuns),
		AutoPauseAfter:        knownInt(m.AutoPauseAfter),
		Labels:                labels,
		Overlap:               knownString(m.Overlap),
		DeleteAfterCompletion: knownBool(m.DeleteAfterCompletion),
	}
	return input, diags
}

// labelsPatch is wanted's labels as a merge patch onto current's: every wanted label, and each
// label current has that wanted lacks as null (removed).
func labelsPatch(current, wanted map[string]*string) map[string]*string {
	patch := make(map[string]*string, len(wanted)+len(current))
	for key := range current {
		patch[key] = nil
	}
	for key, value := range wanted {
		patch[key] = value
	}
	return patch
}

// sameInput tells whether two inputs would write the same task (so no PATCH is needed).
func sameInput(a, b client.TaskInput) bool {
	left, errLeft := json.Marshal(a)
	right, errRight := json.Marshal(b)
	return errLeft == nil && errRight == nil && string(left) == string(right)
}

// taskFromAPI is the state for an API task. prior (the plan or the state) keeps the practitioner's
// spelling of what the API stores normalised: a run_at naming the same instant, and a cron the API
// normalised to exactly what it stores now (storedCron, kept in private state).
func taskFromAPI(ctx context.Context, task *client.Task, prior *taskModel, storedCron string) (taskModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	headers, d := types.MapValueFrom(ctx, types.StringType, nonNilMap(task.HTTP.Headers))
	diags.Append(d...)
	labels, d := types.MapValueFrom(ctx, types.StringType, nonNilMap(task.Labels))
	diags.Append(d...)
	calendars, d := types.ListValueFrom(ctx, types.StringType, nonNilList(task.Schedule.ExcludeCalendars))
	diags.Append(d...)
	m := taskModel{
		ID:   types.StringValue(task.ID),
		Name: types.StringValue(task.Name),
		Schedule: &scheduleModel{
			Cron:             types.StringPointerValue(task.Schedule.Cron),
			Timezone:         types.StringPointerValue(task.Schedule.Timezone),
			RunAt:            types.StringPointerValue(task.Schedule.RunAt),
			Every:            types.StringPointerValue(task.Schedule.Every),
			Anchor:           types.StringPointerValue(task.Schedule.Anchor),
			WindowSeconds:    types.Int64Value(valueOr(task.Schedule.WindowSeconds, 0)),
			StartsAt:         types.StringPointerValue(task.Schedule.StartsAt),
			EndsAt:           types.StringPointerValue(task.Schedule.EndsAt),
			MaxRuns:          types.Int64PointerValue(task.Schedule.MaxRuns),
			ExcludeCalendars: calendars,
		},
		HTTP: &httpModel{
			URL:     types.StringValue(task.HTTP.URL),
			Method:  types.StringValue(task.HTTP.Method),
			Headers: headers,
			Body:    types.StringValue(task.HTTP.Body),
		},
		TimeoutSeconds:        types.Int64Value(task.TimeoutSeconds),
		MaxAttempts:           types.Int64Value(task.MaxAttempts),
		BackoffBaseSeconds:    types.Int64Value(task.BackoffBaseSeconds),
		Priority:              types.Int64Value(task.Priority),
		SecretRef:             types.StringPointerValue(task.SecretRef),
		MissedRuns:            types.StringValue(task.MissedRuns),
		AutoPauseAfter:        types.Int64PointerValue(task.AutoPauseAfter),
		Labels:                labels,
		Overlap:               types.StringValue(task.Overlap),
		DeleteAfterCompletion: types.BoolValue(task.DeleteAfterCompletion),
		RunsScheduled:         types.Int64PointerValue(task.RunsScheduled),
		Paused:                types.BoolValue(task.Status == "paused"),
		Status:                types.StringValue(task.Status),
		PausedReason:          types.StringPointerValue(task.PausedReason),
		ConsecutiveFailures:   types.Int64Value(task.ConsecutiveFailures),
		Version:               types.Int64Value(task.Version),
		ETag:                  types.StringValue(task.ETag),
		NextRunAt:             types.StringPointerValue(task.NextRunAt),
		CreatedAt:             types.StringValue(task.CreatedAt),
		UpdatedAt:             types.StringValue(task.UpdatedAt),
	}
	if prior != nil && prior.Schedule != nil {
		if task.Schedule.Cron != nil && *task.Schedule.Cron == storedCron && !prior.Schedule.Cron.IsNull() {
			m.Schedule.Cron = prior.Schedule.Cron
		}
		// Instants the API stores in UTC, and an interval it may spell otherwise ("90m" as "1h30m"),
		// keep the configuration's spelling while they mean the same.
		for _, kept := range []struct {
			api   *string
			prior types.String
			to    *types.String
			same  func(a, b string) bool
		}{
			{task.Schedule.RunAt, prior.Schedule.RunAt, &m.Schedule.RunAt, sameInstant},
			{task.Schedule.Anchor, prior.Schedule.Anchor, &m.Schedule.Anchor, sameInstant},
			{task.Schedule.StartsAt, prior.Schedule.StartsAt, &m.Schedule.StartsAt, sameInstant},
			{task.Schedule.EndsAt, prior.Schedule.EndsAt, &m.Schedule.EndsAt, sameInstant},
			{task.Schedule.Every, prior.Schedule.Every, &m.Schedule.Every, sameInterval},
		} {
			if kept.api != nil && !kept.prior.IsNull() && !kept.prior.IsUnknown() && kept.same(kept.prior.ValueString(), *kept.api) {
				*kept.to = kept.prior
			}
		}
	}
	return m, diags
}

func sameInstant(a, b string) bool {
	left, errLeft := time.Parse(time.RFC3339Nano, a)
	right, errRight := time.Parse(time.RFC3339Nano, b)
	return errLeft == nil && errRight == nil && left.Equal(right)
}

func knownString(v types.String) *string {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	s := v.ValueString()
	return &s
}

func knownBool(v types.Bool) *bool {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	b := v.ValueBool()
	return &b
}

func valueOr(v *int64, otherwise int64) int64 {
	if v == nil {
		return otherwise
	}
	return *v
}

func nonNilList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// sameInterval tells whether two interval spellings ("90m", "1h30m", "5400s", "1d") are one length.
func sameInterval(a, b string) bool {
	left, okLeft := intervalSeconds(a)
	right, okRight := intervalSeconds(b)
	return okLeft && okRight && left == right
}

// intervalSeconds reads a sequence of <number><unit> with units d, h, m, s.
func intervalSeconds(text string) (int64, bool) {
	units := map[byte]int64{'d': 86400, 'h': 3600, 'm': 60, 's': 1}
	var total, number int64
	digits := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= '0' && c <= '9':
			number = number*10 + int64(c-'0')
			digits = true
		case units[c] != 0 && digits:
			total += number * units[c]
			number, digits = 0, false
		default:
			return 0, false
		}
	}
	return total, !digits && total > 0
}

func knownInt(v types.Int64) *int64 {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	i := v.ValueInt64()
	return &i
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func stringValue(s string) types.String { return types.StringValue(s) }
