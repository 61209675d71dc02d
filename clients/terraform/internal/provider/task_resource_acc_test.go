package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

const taskAddress = "jobsched_task.report"

func taskConfig(name, cron string, priority int, paused bool) string {
	return fmt.Sprintf(`
resource "jobsched_task" "report" {
  name     = %q
  schedule = { cron = %q, timezone = "Europe/Madrid" }
  http = {
    url     = "https://hooks.example.com/report"
    headers = { "Content-Type" = "application/json" }
    body    = "{\"kind\": \"daily\"}"
  }
  priority     = %d
  missed_runs  = "latest"
  max_attempts = 3
  paused       = %t
}
`, name, cron, priority, paused)
}

// taskIDOf reads the task's id from state into *id.
func taskIDOf(id *string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		res, ok := s.RootModule().Resources[taskAddress]
		if !ok {
			return fmt.Errorf("%s not in state", taskAddress)
		}
		*id = res.Primary.ID
		return nil
	}
}

func sameTaskID(id *string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if got := s.RootModule().Resources[taskAddress].Primary.ID; got != *id {
			return fmt.Errorf("task replaced: id %s, was %s (an in-place update keeps the id)", got, *id)
		}
		return nil
	}
}

func checkTasksGone(s *terraform.State) error {
	api, err := client.New(testAPI.URL, testAPI.Token, "tfacc")
	if err != nil {
		return err
	}
	for _, res := range s.RootModule().Resources {
		if res.Type != "jobsched_task" {
			continue
		}
		if _, err := api.GetTask(context.Background(), res.Primary.ID); !client.IsNotFound(err) {
			return fmt.Errorf("task %s still readable after destroy (err %v)", res.Primary.ID, err)
		}
	}
	return nil
}

// TestAccTaskLifecycle: create, no diff, update in place, drift corrected, a 412 not overwritten,
// pause as an attribute, import, destroy.
func TestAccTaskLifecycle(t *testing.T) {
	requireAPI(t)
	var id string
	api := func() *client.Client { return apiClient(t) }
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{
			{ // create; the API normalises the cron (MON-FRI) and the configuration's spelling stays
				Config: taskConfig("weekday report", "0 9 * * mon-fri", 5, false),
				Check: resource.ComposeAggregateTestCheckFunc(
					taskIDOf(&id),
					resource.TestCheckResourceAttr(taskAddress, "schedule.cron", "0 9 * * mon-fri"),
					resource.TestCheckResourceAttr(taskAddress, "schedule.timezone", "Europe/Madrid"),
					resource.TestCheckResourceAttr(taskAddress, "http.method", "POST"),
					resource.TestCheckResourceAttr(taskAddress, "http.headers.Content-Type", "application/json"),
					resource.TestCheckResourceAttr(taskAddress, "timeout_seconds", "30"),
					resource.TestCheckResourceAttr(taskAddress, "max_attempts", "3"),
					resource.TestCheckResourceAttr(taskAddress, "missed_runs", "latest"),
					resource.TestCheckResourceAttr(taskAddress, "status", "active"),
					resource.TestCheckResourceAttr(taskAddress, "version", "1"),
					resource.TestCheckResourceAttr(taskAddress, "etag", `"1"`),
					resource.TestCheckResourceAttrSet(taskAddress, "next_run_at"),
					resource.TestCheckNoResourceAttr(taskAddress, "secret_ref"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{ // update in place (PATCH with If-Match), same id
				Config: taskConfig("weekday report v2", "30 8 * * MON-FRI", 2, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(taskAddress, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameTaskID(&id),
					resource.TestCheckResourceAttr(taskAddress, "name", "weekday report v2"),
					resource.TestCheckResourceAttr(taskAddress, "schedule.cron", "30 8 * * MON-FRI"),
					resource.TestCheckResourceAttr(taskAddress, "priority", "2"),
					resource.TestCheckResourceAttr(taskAddress, "version", "2"),
				),
			},
			{ // drift made through the API (renamed, paused) is planned back and corrected
				PreConfig: func() {
					task, err := api().GetTask(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					input := inputOf(task)
					input.Name = "renamed outside terraform"
					if _, err := api().UpdateTask(context.Background(), id, task.ETag, input); err != nil {
						t.Fatal(err)
					}
					if _, err := api().PauseTask(context.Background(), id); err != nil {
						t.Fatal(err)
					}
				},
				Config: taskConfig("weekday report v2", "30 8 * * MON-FRI", 2, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(taskAddress, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameTaskID(&id),
					resource.TestCheckResourceAttr(taskAddress, "name", "weekday report v2"),
					resource.TestCheckResourceAttr(taskAddress, "status", "active"),
					resource.TestCheckResourceAttr(taskAddress, "paused", "false"),
					func(*terraform.State) error {
						task, err := api().GetTask(context.Background(), id)
						if err != nil {
							return err
						}
						if task.Name != "weekday report v2" || task.Status != "active" {
							return fmt.Errorf("API still has name %q, status %q", task.Name, task.Status)
						}
						return nil
					},
				),
			},
			{ // an edit through the API between plan and apply: the apply's If-Match gets a 412 and
				// nothing is overwritten
				Config: taskConfig("weekday report v3", "30 8 * * MON-FRI", 2, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{sideEffect(func(ctx context.Context) error {
						task, err := api().GetTask(ctx, id)
						if err != nil {
							return err
						}
						input := inputOf(task)
						input.Priority = ptr(int64(9))
						_, err = api().UpdateTask(ctx, id, task.ETag, input)
						return err
					})},
				},
				ExpectError: regexp.MustCompile(`(?s)changed in jobsched since Terraform read it.*Nothing was\s+written`),
			},
			{ // the concurrent edit survived; a new plan starts from it and converges
				PreConfig: func() {
					task, err := api().GetTask(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					if task.Priority != 9 || task.Name != "weekday report v2" {
						t.Fatalf("after the 412 the API has priority %d, name %q: the other writer's edit was lost",
							task.Priority, task.Name)
					}
				},
				Config: taskConfig("weekday report v3", "30 8 * * MON-FRI", 2, false),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameTaskID(&id),
					resource.TestCheckResourceAttr(taskAddress, "name", "weekday report v3"),
					resource.TestCheckResourceAttr(taskAddress, "priority", "2"),
				),
			},
			{ // pause as an attribute
				Config: taskConfig("weekday report v3", "30 8 * * MON-FRI", 2, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameTaskID(&id),
					resource.TestCheckResourceAttr(taskAddress, "status", "paused"),
					resource.TestCheckResourceAttr(taskAddress, "paused", "true"),
					resource.TestCheckResourceAttrSet(taskAddress, "paused_reason"),
				),
			},
			{ // import by id reads back the same attributes
				ResourceName:      taskAddress,
				ImportState:       true,
				ImportStateVerify: true,
			},
		},
	})
}

// TestAccTaskOneShot: a one-shot at run_at keeps the configuration's offset while the instant is the same.
func TestAccTaskOneShot(t *testing.T) {
	requireAPI(t)
	config := `
resource "jobsched_task" "once" {
  name     = "one-shot"
  schedule = { run_at = "2031-06-01T11:00:00+02:00" }
  http     = { url = "https://hooks.example.com/once", method = "GET" }
  auto_pause_after = 0
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{{
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
			},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("jobsched_task.once", "schedule.run_at", "2031-06-01T11:00:00+02:00"),
				resource.TestCheckNoResourceAttr("jobsched_task.once", "schedule.timezone"),
				resource.TestCheckNoResourceAttr("jobsched_task.once", "schedule.cron"),
				resource.TestCheckResourceAttr("jobsched_task.once", "next_run_at", "2031-06-01T09:00:00Z"),
				resource.TestCheckResourceAttr("jobsched_task.once", "auto_pause_after", "0"),
				resource.TestCheckResourceAttr("jobsched_task.once", "http.body", ""),
			),
		}},
	})
}

// TestAccTaskBadInputFailsOnItsAttribute: the API's 400s, with its message, on the attribute named
// by problem+json's field (Terraform prints the attribute's line of configuration under the error).
func TestAccTaskBadInputFailsOnItsAttribute(t *testing.T) {
	requireAPI(t)
	bad := func(schedule, http, extra string) string {
		return fmt.Sprintf(`
resource "jobsched_task" "bad" {
  name = "bad input"
  schedule = {
    %s
  }
  http = {
    %s
  }
  %s
}
`, schedule, http, extra)
	}
	const goodSchedule, goodHTTP = `cron = "@daily"`, `url = "https://hooks.example.com/x"`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{
			{
				Config:      bad(goodSchedule, `url = "http://10.1.2.3/hook"`, ""),
				ExpectError: regexp.MustCompile(`Creating the task failed: http\.url: destination not allowed`),
			},
			{
				Config:      bad(goodSchedule, goodHTTP, `secret_ref = "no-such-secret"`),
				ExpectError: regexp.MustCompile(`(?s)secret_ref: no such secret.*secret_ref = "no-such-secret"`),
			},
			{
				Config:      bad(goodSchedule, goodHTTP, `timeout_seconds = 901`),
				ExpectError: regexp.MustCompile(`(?s)timeout_seconds: .*900.*timeout_seconds = 901`),
			},
			{
				Config:      bad(`cron = "61 * * * *"`, goodHTTP, ""),
				ExpectError: regexp.MustCompile(`Creating the task failed: schedule\.cron: minute field: '61' is out of range`),
			},
			{ // pure syntax, refused at plan time without a call
				Config:      bad(`run_at = "tomorrow at nine"`, goodHTTP, ""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`is not an RFC 3339 time`),
			},
		},
	})
}

func inputOf(task *client.Task) client.TaskInput {
	return client.TaskInput{
		Name: task.Name, Schedule: task.Schedule, HTTP: task.HTTP,
		TimeoutSeconds: &task.TimeoutSeconds, MaxAttempts: &task.MaxAttempts,
		BackoffBaseSeconds: &task.BackoffBaseSeconds, Priority: &task.Priority,
		SecretRef: task.SecretRef, MissedRuns: &task.MissedRuns, AutoPauseAfter: task.AutoPauseAfter,
	}
}

func ptr[T any](v T) *T { return &v }
