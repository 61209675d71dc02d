package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// privateStoredCron holds the cron as the API stored it, beside the configuration's spelling in state.
const privateStoredCron = "stored_cron"

var (
	_ resource.ResourceWithConfigure   = (*taskResource)(nil)
	_ resource.ResourceWithImportState = (*taskResource)(nil)
)

type taskResource struct {
	api *client.Client
}

// NewTaskResource is the jobsched_task resource.
func NewTaskResource() resource.Resource { return &taskResource{} }

func (r *taskResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_task"
}

func (r *taskResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = taskResourceSchema()
}

func (r *taskResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

// privateGetter and privateSetter are the parts of the framework's private state we use.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

func storedCron(ctx context.Context, private privateGetter) string {
	raw, _ := private.GetKey(ctx, privateStoredCron)
	var cron string
	if len(raw) > 0 && json.Unmarshal(raw, &cron) != nil {
		return ""
	}
	return cron
}

func rememberCron(ctx context.Context, private privateSetter, task *client.Task) diag.Diagnostics {
	cron := ""
	if task.Schedule.Cron != nil {
		cron = *task.Schedule.Cron
	}
	raw, _ := json.Marshal(cron)
	return private.SetKey(ctx, privateStoredCron, raw)
}

// setTask writes the API's task into state, keeping prior's spelling of normalised values.
func setTask(ctx context.Context, state *tfsdk.State, private privateSetter, task *client.Task, prior *taskModel, cron string) diag.Diagnostics {
	model, diags := taskFromAPI(ctx, task, prior, cron)
	diags.Append(state.Set(ctx, &model)...)
	diags.Append(rememberCron(ctx, private, task)...)
	return diags
}

func (r *taskResource) fieldNames() map[string]bool {
	return schemaFieldNames(taskResourceSchema().Attributes)
}

func (r *taskResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan taskModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	input, diags := plan.input(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	task, err := r.api.CreateTask(ctx, input)
	if err != nil {
		addAPIError(&resp.Diagnostics, "Creating the task", err, r.fieldNames())
		return
	}
	cron := apiCron(task)
	if plan.Paused.ValueBool() {
		paused, err := r.api.PauseTask(ctx, task.ID)
		if err != nil {
			// Saved so that Terraform knows the task (tainted: the next apply replaces it).
			resp.Diagnostics.Append(setTask(ctx, &resp.State, resp.Private, task, &plan, cron)...)
			addAPIError(&resp.Diagnostics, "Pausing the new task", err, nil)
			return
		}
		task = paused
	}
	resp.Diagnostics.Append(setTask(ctx, &resp.State, resp.Private, task, &plan, cron)...)
}

func (r *taskResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state taskModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	task, err := r.api.GetTask(ctx, state.ID.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: planned anew
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Reading the task", err, nil)
		return
	}
	resp.Diagnostics.Append(setTask(ctx, &resp.State, resp.Private, task, &state, storedCron(ctx, req.Private))...)
}

func (r *taskResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state taskModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	wanted, diags := plan.input(ctx)
	resp.Diagnostics.Append(diags...)
	current, diags := state.input(ctx)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	id := state.ID.ValueString()
	task := (*client.Task)(nil)
	cron := storedCron(ctx, req.Private)
	if !sameInput(wanted, current) {
		// Labels merge on the server: the ones refreshed into state but no longer configured
		// (drift included) are sent as null to remove them.
		wanted.Labels = labelsPatch(current.Labels, wanted.Labels)
		var err error
		// If-Match with the ETag read at refresh: an edit made since is a 412, never overwritten.
		task, err = r.api.UpdateTask(ctx, id, state.ETag.ValueString(), wanted)
		if client.IsStale(err) {
			resp.Diagnostics.AddError("The task changed in jobsched since Terraform read it",
				fmt.Sprintf("Task %s is no longer at ETag %s (%v). Nothing was written. Run terraform plan "+
					"(or apply) again: it reads the current task and plans the change from there.",
					id, state.ETag.ValueString(), err))
			return
		}
		if err != nil {
			addAPIError(&resp.Diagnostics, "Updating the task", err, r.fieldNames())
			return
		}
		cron = apiCron(task)
	}
	havePaused := state.Status.ValueString() == "paused"
	if task != nil {
		havePaused = task.Status == "paused"
	}
	var err error
	switch wantPaused := plan.Paused.ValueBool(); {
	case wantPaused && !havePaused:
		task, err = r.api.PauseTask(ctx, id)
	case !wantPaused && havePaused:
		task, err = r.api.ResumeTask(ctx, id)
	case task == nil: // nothing to write: read what the computed attributes are now
		task, err = r.api.GetTask(ctx, id)
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Pausing or resuming the task", err, nil)
		return
	}
	resp.Diagnostics.Append(setTask(ctx, &resp.State, resp.Private, task, &plan, cron)...)
}

func (r *taskResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state taskModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	// Unconditional: a destroy means gone, whatever version the task reached meanwhile.
	err := r.api.DeleteTask(ctx, state.ID.ValueString(), "")
	if err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, "Deleting the task", err, nil)
	}
}

func (r *taskResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("id"), req, resp)
}

func apiCron(task *client.Task) string {
	if task.Schedule.Cron == nil {
		return ""
	}
	return *task.Schedule.Cron
}
