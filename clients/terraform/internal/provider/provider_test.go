package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// TestSchemasAreValid: the framework's own checks of every schema (as Terraform would run them).
func TestSchemasAreValid(t *testing.T) {
	server := providerserver.NewProtocol6(New("test")())()
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("%s: %s: %s", d.Severity, d.Summary, d.Detail)
	}
	for _, name := range []string{"jobsched_task", "jobsched_secret", "jobsched_signing_secret", "jobsched_calendar"} {
		if resp.ResourceSchemas[name] == nil {
			t.Errorf("no resource %s", name)
		}
	}
	for _, name := range []string{"jobsched_task", "jobsched_tasks"} {
		if resp.DataSourceSchemas[name] == nil {
			t.Errorf("no data source %s", name)
		}
	}
}

func TestFieldErrorsLandOnTheirAttribute(t *testing.T) {
	problem := &client.Problem{Status: 400, Type: "https://jobsched.dev/problems/validation-error", Errors: map[string][]string{
		"schedule.cron": {"minute field: '61' is out of range"},
		"http.url":      {"destination not allowed"},
		"secret_ref":    {"no such secret"},
		"tenant_id":     {"unexpected field"},
		// A label key may hold dots and a slash: the whole rest is the map key.
		"labels.Example.com/Team": {"a label key is 1-63 of a-z 0-9 . _ -"},
	}}
	var diags diag.Diagnostics
	addAPIError(&diags, "Creating the task", problem, schemaFieldNames(taskResourceSchema().Attributes))
	got := map[string]string{}
	for _, d := range diags {
		key := "(none)"
		if withPath, ok := d.(diag.DiagnosticWithPath); ok {
			key = withPath.Path().String()
		}
		got[key] = d.Summary()
	}
	want := map[string]string{
		path.Root("schedule").AtName("cron").String(): "Creating the task failed: schedule.cron: minute field: '61' is out of range",
		path.Root("http").AtName("url").String():      "Creating the task failed: http.url: destination not allowed",
		path.Root("secret_ref").String():              "Creating the task failed: secret_ref: no such secret",
		path.Root("labels").AtMapKey("Example.com/Team").String(): "Creating the task failed: " +
			"labels.Example.com/Team: a label key is 1-63 of a-z 0-9 . _ -",
		"(none)": "Creating the task failed: tenant_id: unexpected field",
	}
	for key, summary := range want {
		if got[key] != summary {
			t.Errorf("at %s: %q, want %q (all: %v)", key, got[key], summary, got)
		}
	}
}

func TestTokenSources(t *testing.T) {
	ctx := context.Background()
	t.Setenv(EnvToken, "")
	t.Setenv(EnvTokenCommand, "")
	if token, _, err := resolveToken(ctx, "", []string{"printf", "  tok-from-command\n"}); err != nil || token != "tok-from-command" {
		t.Errorf("command: %q, %v", token, err)
	}
	if _, _, err := resolveToken(ctx, "a", []string{"printf", "b"}); err == nil {
		t.Error("token and token_command both accepted")
	}
	if _, _, err := resolveToken(ctx, "", []string{"false"}); err == nil || !strings.Contains(err.Error(), "failed") {
		t.Errorf("a failing command: %v", err)
	}
	if _, _, err := resolveToken(ctx, "", nil); err == nil || !strings.Contains(err.Error(), EnvToken) {
		t.Errorf("no token at all: %v", err)
	}
	t.Setenv(EnvTokenCommand, "echo tok-from-env-command")
	if token, _, err := resolveToken(ctx, "", nil); err != nil || token != "tok-from-env-command" {
		t.Errorf("env command: %q, %v", token, err)
	}
	t.Setenv(EnvToken, "tok-from-env")
	if token, _, err := resolveToken(ctx, "", nil); err != nil || token != "tok-from-env" {
		t.Errorf("env: %q, %v", token, err)
	}
}

func TestStateKeepsTheConfigurationsSpellingOfWhatTheAPINormalises(t *testing.T) {
	ctx := context.Background()
	cron, runAt := "0 9 * * MON-FRI", "2031-06-01T09:00:00Z"
	prior := &taskModel{Schedule: &scheduleModel{}}
	prior.Schedule.Cron = stringValue("0 9 * * mon-fri")
	task := &client.Task{Schedule: client.Schedule{Cron: &cron}}
	model, _ := taskFromAPI(ctx, task, prior, cron)
	if model.Schedule.Cron.ValueString() != "0 9 * * mon-fri" {
		t.Errorf("cron the API stored as sent: %q", model.Schedule.Cron.ValueString())
	}
	other := "0 10 * * MON-FRI"
	task.Schedule.Cron = &other // changed outside Terraform: the API's value shows as drift
	if model, _ := taskFromAPI(ctx, task, prior, cron); model.Schedule.Cron.ValueString() != other {
		t.Errorf("drifted cron hidden: %q", model.Schedule.Cron.ValueString())
	}
	prior.Schedule.RunAt = stringValue("2031-06-01T11:00:00+02:00")
	task.Schedule = client.Schedule{RunAt: &runAt}
	if model, _ := taskFromAPI(ctx, task, prior, ""); model.Schedule.RunAt.ValueString() != "2031-06-01T11:00:00+02:00" {
		t.Errorf("same instant, other spelling: %q", model.Schedule.RunAt.ValueString())
	}
	later := "2031-06-01T10:00:00Z"
	task.Schedule.RunAt = &later
	if model, _ := taskFromAPI(ctx, task, prior, ""); model.Schedule.RunAt.ValueString() != later {
		t.Errorf("another instant kept the old spelling: %q", model.Schedule.RunAt.ValueString())
	}
}

func TestIntervalSpellingsOfOneLengthAreTheSame(t *testing.T) {
	for _, pair := range [][2]string{{"90m", "1h30m"}, {"5400s", "90m"}, {"1d", "24h"}, {"2h", "120m"}} {
		if !sameInterval(pair[0], pair[1]) {
			t.Errorf("%q and %q should be the same interval", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"90m", "1h"}, {"90", "90m"}, {"m", "1m"}, {"1x", "1x"}, {"", ""}, {"0m", "0s"}} {
		if sameInterval(pair[0], pair[1]) {
			t.Errorf("%q and %q should not be the same interval", pair[0], pair[1])
		}
	}
}
