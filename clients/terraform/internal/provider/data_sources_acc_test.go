package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccTaskDataSources: one task by id and by name; the tasks of one name.
func TestAccTaskDataSources(t *testing.T) {
	requireAPI(t)
	config := `
resource "jobsched_task" "a" {
  name     = "ds nightly"
  schedule = { cron = "0 2 * * *", timezone = "Europe/Berlin" }
  http     = { url = "https://hooks.example.com/a" }
}

resource "jobsched_task" "b" {
  name     = "ds nightly"
  schedule = { cron = "0 3 * * *" }
  http     = { url = "https://hooks.example.com/b" }
  paused   = true
}

resource "jobsched_task" "c" {
  name     = "ds unique"
  schedule = { cron = "0 4 * * *" }
  http     = { url = "https://hooks.example.com/c" }
}

data "jobsched_task" "by_id" {
  id = jobsched_task.a.id
}

data "jobsched_task" "by_name" {
  name       = "ds unique"
  depends_on = [jobsched_task.c]
}

data "jobsched_tasks" "nightly" {
  name       = "ds nightly"
  depends_on = [jobsched_task.a, jobsched_task.b]
}

data "jobsched_tasks" "nightly_paused" {
  name       = "ds nightly"
  status     = "paused"
  depends_on = [jobsched_task.a, jobsched_task.b]
}
`
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkTasksGone,
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPair("data.jobsched_task.by_id", "id", "jobsched_task.a", "id"),
					resource.TestCheckResourceAttr("data.jobsched_task.by_id", "schedule.timezone", "Europe/Berlin"),
					resource.TestCheckResourceAttr("data.jobsched_task.by_id", "http.url", "https://hooks.example.com/a"),
					resource.TestCheckResourceAttrPair("data.jobsched_task.by_name", "id", "jobsched_task.c", "id"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.nightly", "tasks.#", "2"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.nightly", "ids.#", "2"),
					resource.TestCheckResourceAttr("data.jobsched_tasks.nightly_paused", "tasks.#", "1"),
					resource.TestCheckResourceAttrPair("data.jobsched_tasks.nightly_paused", "ids.0", "jobsched_task.b", "id"),
				),
			},
			{ // a name two tasks share is not "one task"
				Config:      config + "\ndata \"jobsched_task\" \"ambiguous\" {\n  name = \"ds nightly\"\n}\n",
				ExpectError: regexp.MustCompile(`2 of the tenant's tasks are named "ds nightly"`),
			},
		},
	})
}
