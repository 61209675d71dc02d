package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

const labelledAddress = "jobsched_task.labelled"

// labelsConfig is a labelled task (labels as HCL, "" for none), an unlabelled one beside it, and
// the data sources that select by label.
func labelsConfig(labels string) string {
	return fmt.Sprintf(`
resource "jobsched_task" "labelled" {
  name     = "labelled"
  schedule = { cron = "@daily" }
  http     = { url = "https://hooks.example.com/labelled" }
  %s
}

resource "jobsched_task" "plain" {
  name     = "plain"
  schedule = { cron = "@daily" }
  http     = { url = "https://hooks.example.com/plain" }
}

data "jobsched_task" "labelled" {
  id = jobsched_task.labelled.id
}

data "jobsched_tasks" "staging" {
  labels     = { env = "staging" }
  depends_on = [jobsched_task.labelled, jobsched_task.plain]
}

data "jobsched_tasks" "staging_daily" {
  name       = "plain"
  labels     = { env = "staging" }
  depends_on = [jobsched_task.labelled, jobsched_task.plain]
}
`, labels)
}

// apiLabels checks the task's labels as the API has them.
func apiLabels(t *testing.T, id *string, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		task, err := apiClient(t).GetTask(context.Background(), *id)
		if err != nil {
			return err
		}
		if !maps.Equal(task.Labels, want) {
			return fmt.Errorf("the API has labels %v, want %v", task.Labels, want)
		}
		return nil
	}
}

func labelledIDOf(id *string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		*id = s.RootModule().Resources[labelledAddress].Primary.ID
		return nil
	}
}

// TestAccTaskLabels: create with labels, change one and remove one (If-Match merge patch with the
// removed key as null), drift through the API planned back, the data sources by label, all removed.
func TestAccTaskLabels(t *testing.T) {
	requireAPI(t)
	var id string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{
			{
				Config: labelsConfig(`labels = { env = "prod", team = "ops" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					labelledIDOf(&id),
					resource.TestCheckResourceAttr(labelledAddress, "labels.%", "2"),
					resource.TestCheckResourceAttr(labelledAddress, "labels.env", "prod"),
					resource.TestCheckResourceAttr("jobsched_task.plain", "labels.%", "0"),
					apiLabels(t, &id, map[string]string{"env": "prod", "team": "ops"}),
					resource.TestCheckResourceAttr("data.jobsched_tasks.staging", "tasks.#", "0"),
				),
			},
			{ // env changed, team removed: an in-place update
				Config: labelsConfig(`labels = { env = "staging" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(labelledAddress, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameLabelledID(&id),
					resource.TestCheckResourceAttr(labelledAddress, "labels.%", "1"),
					resource.TestCheckResourceAttr(labelledAddress, "labels.env", "staging"),
					apiLabels(t, &id, map[string]string{"env": "staging"}),
					resource.TestCheckResourceAttr("data.jobsched_task.labelled", "labels.env", "staging"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.staging", "tasks.#", "1"),
					resource.TestCheckResourceAttrPair("data.jobsched_tasks.staging", "ids.0", labelledAddress, "id"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.staging", "tasks.0.labels.env", "staging"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.staging_daily", "tasks.#", "0"),
				),
			},
			{ // drift through the API (a label added, one changed) is planned back and corrected
				PreConfig: func() {
					api := apiClient(t)
					task, err := api.GetTask(context.Background(), id)
					if err != nil {
						t.Fatal(err)
					}
					input := inputOf(task)
					input.Labels = map[string]*string{"owner": ptr("someone"), "env": ptr("prod")}
					if _, err := api.UpdateTask(context.Background(), id, task.ETag, input); err != nil {
						t.Fatal(err)
					}
				},
				Config: labelsConfig(`labels = { env = "staging" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(labelledAddress, plancheck.ResourceActionUpdate)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameLabelledID(&id),
					resource.TestCheckResourceAttr(labelledAddress, "labels.%", "1"),
					apiLabels(t, &id, map[string]string{"env": "staging"}),
				),
			},
			{ // import reads the labels back
				Config:            labelsConfig(`labels = { env = "staging" }`),
				ResourceName:      labelledAddress,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{ // the attribute left out: every label removed
				Config: labelsConfig(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					sameLabelledID(&id),
					resource.TestCheckResourceAttr(labelledAddress, "labels.%", "0"),
					apiLabels(t, &id, map[string]string{}),
				),
			},
			{ // a key the API refuses fails on the label itself
				Config:      labelsConfig(`labels = { "Bad Key" = "x" }`),
				ExpectError: regexp.MustCompile(`Updating the task failed: labels\.Bad Key: a label key is`),
			},
		},
	})
}

func sameLabelledID(id *string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if got := s.RootModule().Resources[labelledAddress].Primary.ID; got != *id {
			return fmt.Errorf("task replaced: id %s, was %s", got, *id)
		}
		return nil
	}
}
