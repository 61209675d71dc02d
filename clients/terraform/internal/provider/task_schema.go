package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TaskDefaults are the API's defaults for fields a configuration leaves out (TaskInput in
// tasks/serializers.py). The acceptance tests compare them with the running API's /v1/schema,
// so the two cannot drift apart unnoticed.
var TaskDefaults = struct {
	TimeoutSeconds, MaxAttempts, BackoffBaseSeconds, Priority int64
	MissedRuns, Method, Body, Timezone, Overlap               string
}{30, 5, 10, 5, "all", "POST", "", "UTC", "allow"}

func taskResourceSchema() schema.Schema {
	readOnly := func(description string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: description}
	}
	return schema.Schema{
		MarkdownDescription: "A jobsched task: an HTTP call on a cron schedule (in a time zone) or once at `run_at`. " +
			"Attributes are named and nested as in the API's JSON (`GET /v1/tasks/{id}`). Edits are merge patches " +
			"sent with `If-Match: <etag>`: if the task changed in jobsched since Terraform last read it, the apply " +
			"fails with the API's 412 and nothing is overwritten; run `terraform plan` again to see the change. " +
			"Validation is the API's own: a refused value fails the apply on its attribute with the API's message. " +
			"Import with the task's id.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The task's id (a UUID); it never changes.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "1-200 characters, no control characters."},
			"schedule": schema.SingleNestedAttribute{
				Required: true,
				MarkdownDescription: "When the task runs: `cron` (with `timezone`) or `every` (with `anchor`) for a " +
					"recurring task, or `run_at` for a one-shot; bounded by `starts_at`, `ends_at` and `max_runs`, spread " +
					"by `window_seconds`, and passing over the dates of `exclude_calendars`. Changing it recomputes `next_run_at`.",
				Attributes: map[string]schema.Attribute{
					"cron": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Five cron fields or a macro (`@daily`, `@hourly`, ...). The API stores it " +
							"normalised (names upper-cased, `5-5` as `5`); the configuration's spelling is kept in state " +
							"while the API's value is unchanged.",
					},
					"timezone": schema.StringAttribute{
						Optional: true, Computed: true,
						MarkdownDescription: "An IANA zone the cron is read in. Default for a cron or an `every`: `UTC`; none for a one-shot.",
						PlanModifiers:       []planmodifier.String{timezoneDefault{}},
					},
					"run_at": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "A one-shot's instant, RFC 3339 with an offset (`2027-01-01T09:00:00Z`); the " +
							"API stores it in UTC and the configuration's spelling is kept while the instant is the same.",
						Validators: []validator.String{rfc3339Validator{}},
					},
					"every": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "A fixed interval in UTC, whatever the daylight saving: `90m`, `2h`, `1h30m`, " +
							"`1d` (at least 1 minute). The configuration's spelling is kept while the API's means the same.",
					},
					"anchor": schema.StringAttribute{
						Optional: true, Computed: true,
						MarkdownDescription: "With `every`: the instant runs are counted from (runs at anchor + k x every), " +
							"RFC 3339 with an offset. Default: chosen by the API when the schedule is written.",
						Validators: []validator.String{rfc3339Validator{}},
					},
					"window_seconds": schema.Int64Attribute{
						Optional: true, Computed: true, Default: int64default.StaticInt64(0),
						MarkdownDescription: "0-86400, and no longer than the schedule's shortest interval: each run is " +
							"called at its time plus an offset in the window, the same for every retry; the run keeps its " +
							"time as `X-Scheduled-At`. Default: `0`.",
					},
					"starts_at": schema.StringAttribute{
						Optional: true, MarkdownDescription: "No run before this instant (RFC 3339 with an offset).",
						Validators: []validator.String{rfc3339Validator{}},
					},
					"ends_at": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "No run after this instant; past it the task is `completed`.",
						Validators:          []validator.String{rfc3339Validator{}},
					},
					"max_runs": schema.Int64Attribute{
						Optional: true, MarkdownDescription: "After this many runs the task is `completed`.",
					},
					"exclude_calendars": schema.ListAttribute{
						Optional: true, Computed: true, ElementType: types.StringType,
						Default: listdefault.StaticValue(types.ListValueMust(types.StringType, []attr.Value{})),
						MarkdownDescription: "Names of the tenant's calendars (`jobsched_calendar`): a run on one of their " +
							"dates is skipped (its history says `calendar:<name>`). Default: none.",
					},
				},
			},
			"http": schema.SingleNestedAttribute{
				Required:            true,
				MarkdownDescription: "The request the task sends.",
				Attributes: map[string]schema.Attribute{
					"url": schema.StringAttribute{Required: true, MarkdownDescription: "`http` or `https` on port 80/443, a public host."},
					"method": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(TaskDefaults.Method),
						MarkdownDescription: "GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS. Default: `POST`.",
					},
					"headers": schema.MapAttribute{
						Optional: true, Computed: true, ElementType: types.StringType,
						Default:             mapdefault.StaticValue(types.MapValueMust(types.StringType, nil)),
						MarkdownDescription: "Request headers (credentials go in `secret_ref`). Default: none.",
					},
					"body": schema.StringAttribute{
						Optional: true, Computed: true, Default: stringdefault.StaticString(TaskDefaults.Body),
						MarkdownDescription: "The request body, at most 64 KiB. Default: empty.",
					},
				},
			},
			"timeout_seconds": intWithDefault(TaskDefaults.TimeoutSeconds, "Seconds a call may take, 1-900."),
			"max_attempts":    intWithDefault(TaskDefaults.MaxAttempts, "Attempts per run, 1-100."),
			"backoff_base_seconds": intWithDefault(TaskDefaults.BackoffBaseSeconds,
				"The retry backoff's base delay in seconds, 1-86400."),
			"priority": intWithDefault(TaskDefaults.Priority,
				"0-9; 0 runs first among the tenant's own jobs, never ahead of another tenant's."),
			"secret_ref": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "The name of one of the tenant's secrets (e.g. `jobsched_secret.x.name`), sent " +
					"as the `Authorization` header. Calls are signed (`webhook-signature`) with the tenant's signing " +
					"secrets (`jobsched_signing_secret`).",
			},
			"missed_runs": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(TaskDefaults.MissedRuns),
				MarkdownDescription: "Runs reached late (after an outage): `all` (replayed, capped), `latest` or `skip`. Default: `all`.",
			},
			"auto_pause_after": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "Pause after this many dead jobs in a row: 0 never, up to 1000; null (unset): " +
					"the service's default.",
			},
			"labels": schema.MapAttribute{
				Optional: true, Computed: true, ElementType: types.StringType,
				Default: mapdefault.StaticValue(types.MapValueMust(types.StringType, map[string]attr.Value{})),
				MarkdownDescription: "Up to 16 labels to select tasks by (`jobsched_tasks`' `labels`, the API's " +
					"`?label=key=value`), e.g. `{ env = \"prod\" }`. Keys: a-z 0-9 . _ - (an optional `prefix/`), " +
					"values: A-Z a-z 0-9 . _ - or empty, each at most 63. Labels added outside Terraform are " +
					"removed by the next apply. Default: none.",
			},
			"overlap": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(TaskDefaults.Overlap),
				MarkdownDescription: "While a previous run is unfinished: `allow` (runs may overlap), `skip` (the new " +
					"run is skipped), `buffer_one` (at most one run waits) or `replace` (a waiting or retrying run is " +
					"cancelled for the new one; a call in flight is never interrupted). Default: `allow`.",
			},
			"delete_after_completion": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Delete the task once it is `completed` (past `ends_at` or `max_runs`). Default: `false`.",
			},
			"runs_scheduled": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "Runs made so far, counted while the schedule has `ends_at` or `max_runs`; null otherwise.",
			},
			"paused": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Whether the task is paused (pending jobs cancelled, nothing runs). A task " +
					"that paused itself (`auto_pause_after`) shows as a change back to `false` in the next plan.",
			},
			"status":        readOnly("`active`, `paused` or `completed` (past `ends_at` or `max_runs`)."),
			"paused_reason": readOnly("Why the task is paused; null while active."),
			"consecutive_failures": schema.Int64Attribute{
				Computed: true, MarkdownDescription: "Dead jobs in a row; a success resets it.",
			},
			"version":     schema.Int64Attribute{Computed: true, MarkdownDescription: "Bumped by every change."},
			"etag":        readOnly("The version as the API's ETag (`\"7\"`), sent as `If-Match` on every edit."),
			"next_run_at": readOnly("The next run (UTC); null when none is left."),
			"created_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When the task was created.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"updated_at": readOnly("When the task last changed."),
		},
	}
}

func intWithDefault(value int64, description string) schema.Int64Attribute {
	return schema.Int64Attribute{
		Optional: true, Computed: true, Default: int64default.StaticInt64(value),
		MarkdownDescription: fmt.Sprintf("%s Default: `%d`.", description, value),
	}
}

// timezoneDefault plans the zone the API will store: the configured one, else UTC for a cron and
// none for a one-shot (the schedule's other attributes decide which).
type timezoneDefault struct{}

func (timezoneDefault) Description(context.Context) string {
	return "UTC for a cron or an interval without a zone, null for a one-shot"
}

func (m timezoneDefault) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (timezoneDefault) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var cron, every types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("schedule").AtName("cron"), &cron)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("schedule").AtName("every"), &every)...)
	switch {
	case cron.IsUnknown() || every.IsUnknown():
		resp.PlanValue = types.StringUnknown()
	case cron.IsNull() && every.IsNull():
		resp.PlanValue = types.StringNull()
	default:
		resp.PlanValue = types.StringValue(TaskDefaults.Timezone)
	}
}

// rfc3339Validator checks run_at's syntax only (the API decides whether the instant is acceptable):
// the provider must read it to keep the configuration's spelling of the instant the API stores.
type rfc3339Validator struct{}

func (rfc3339Validator) Description(context.Context) string {
	return "an RFC 3339 time with an offset"
}

func (v rfc3339Validator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (rfc3339Validator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid run_at",
			fmt.Sprintf("%q is not an RFC 3339 time with an offset, e.g. 2027-01-01T09:00:00Z", req.ConfigValue.ValueString()))
	}
}

// schemaFieldNames lists the dotted names ("schedule.cron") of a schema's attributes, so that the
// API's problem fields can be put on them; a map attribute is also listed as "labels.*", whose
// fields ("labels.env") name one of its keys.
func schemaFieldNames(attributes map[string]schema.Attribute) map[string]bool {
	names := map[string]bool{}
	for name, attribute := range attributes {
		names[name] = true
		if _, ok := attribute.(schema.MapAttribute); ok {
			names[name+".*"] = true
		}
		if nested, ok := attribute.(schema.SingleNestedAttribute); ok {
			for child := range nested.Attributes {
				names[name+"."+child] = true
			}
		}
	}
	return names
}
