package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

// taskDataAttributes are the resource's attributes, read-only: one owner of names and descriptions.
func taskDataAttributes() map[string]dsschema.Attribute {
	return readOnlyAttributes(taskResourceSchema().Attributes)
}

func readOnlyAttributes(attributes map[string]rschema.Attribute) map[string]dsschema.Attribute {
	out := make(map[string]dsschema.Attribute, len(attributes))
	for name, attribute := range attributes {
		description := attribute.GetMarkdownDescription()
		switch a := attribute.(type) {
		case rschema.StringAttribute:
			out[name] = dsschema.StringAttribute{Computed: true, Sensitive: a.Sensitive, MarkdownDescription: description}
		case rschema.Int64Attribute:
			out[name] = dsschema.Int64Attribute{Computed: true, MarkdownDescription: description}
		case rschema.BoolAttribute:
			out[name] = dsschema.BoolAttribute{Computed: true, MarkdownDescription: description}
		case rschema.MapAttribute:
			out[name] = dsschema.MapAttribute{Computed: true, ElementType: a.ElementType, MarkdownDescription: description}
		case rschema.ListAttribute:
			out[name] = dsschema.ListAttribute{Computed: true, ElementType: a.ElementType, MarkdownDescription: description}
		case rschema.SingleNestedAttribute:
			out[name] = dsschema.SingleNestedAttribute{
				Computed: true, Attributes: readOnlyAttributes(a.Attributes), MarkdownDescription: description,
			}
		default:
			panic(fmt.Sprintf("readOnlyAttributes: no data source form for %s (%T)", name, attribute))
		}
	}
	return out
}

type taskDataSource struct {
	api *client.Client
}

// NewTaskDataSource is the jobsched_task data source: one task by id or by its (unique) name.
func NewTaskDataSource() datasource.DataSource { return &taskDataSource{} }

func (d *taskDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_task"
}

func (d *taskDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	attributes := taskDataAttributes()
	attributes["id"] = dsschema.StringAttribute{
		Optional: true, Computed: true, MarkdownDescription: "The task's id. Give `id` or `name`.",
	}
	attributes["name"] = dsschema.StringAttribute{
		Optional: true, Computed: true,
		MarkdownDescription: "The task's exact name; exactly one of the tenant's tasks must have it. Give `id` or `name`.",
	}
	resp.Schema = dsschema.Schema{
		MarkdownDescription: "One of the tenant's tasks, by id or by name, with every attribute of `jobsched_task`.",
		Attributes:          attributes,
	}
}

func (d *taskDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *taskDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var config taskModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if config.ID.IsNull() == config.Name.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Give id or name", "Set exactly one of id and name.")
		return
	}
	var task *client.Task
	if !config.ID.IsNull() {
		found, err := d.api.GetTask(ctx, config.ID.ValueString())
		if err != nil {
			addAPIError(&resp.Diagnostics, "Reading task "+config.ID.ValueString(), err, nil)
			return
		}
		task = found
	} else {
		name := config.Name.ValueString()
		tasks, err := d.api.ListTasks(ctx, nil, func(t *client.Task) bool { return t.Name == name })
		if err != nil {
			addAPIError(&resp.Diagnostics, "Listing tasks", err, nil)
			return
		}
		if len(tasks) != 1 {
			resp.Diagnostics.AddAttributeError(path.Root("name"), "No single task of that name",
				fmt.Sprintf("%d of the tenant's tasks are named %q; use id, or the jobsched_tasks data source.", len(tasks), name))
			return
		}
		task = &tasks[0]
	}
	model, diags := taskFromAPI(ctx, task, nil, "")
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
}

type tasksDataSource struct {
	api *client.Client
}

type tasksModel struct {
	Name   types.String `tfsdk:"name"`
	Status types.String `tfsdk:"status"`
	Labels types.Map    `tfsdk:"labels"`
	IDs    types.List   `tfsdk:"ids"`
	Tasks  []taskModel  `tfsdk:"tasks"`
}

// NewTasksDataSource is the jobsched_tasks data source: the tenant's tasks, filtered.
func NewTasksDataSource() datasource.DataSource { return &tasksDataSource{} }

func (d *tasksDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_tasks"
}

func (d *tasksDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = dsschema.Schema{
		MarkdownDescription: "The tenant's tasks, newest first, optionally only those carrying some labels " +
			"(selected by the API, `GET /v1/tasks?label=key=value`), of one name or in one status (filtered " +
			"by the provider from every page of that listing).",
		Attributes: map[string]dsschema.Attribute{
			"name":   dsschema.StringAttribute{Optional: true, MarkdownDescription: "Only tasks with exactly this name."},
			"status": dsschema.StringAttribute{Optional: true, MarkdownDescription: "Only tasks in this status (`active`, `paused`)."},
			"labels": dsschema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Only tasks carrying every one of these labels (at most 8), e.g. `{ env = \"prod\" }`.",
			},
			"ids": dsschema.ListAttribute{
				Computed: true, ElementType: types.StringType, MarkdownDescription: "The tasks' ids, newest first.",
			},
			"tasks": dsschema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The tasks, newest first, each with every attribute of `jobsched_task`.",
				NestedObject:        dsschema.NestedAttributeObject{Attributes: taskDataAttributes()},
			},
		},
	}
}

func (d *tasksDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *tasksDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var config tasksModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var labels map[string]string
	if !config.Labels.IsNull() && !config.Labels.IsUnknown() {
		resp.Diagnostics.Append(config.Labels.ElementsAs(ctx, &labels, false)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	tasks, err := d.api.ListTasks(ctx, labels, func(t *client.Task) bool {
		return (config.Name.IsNull() || t.Name == config.Name.ValueString()) &&
			(config.Status.IsNull() || t.Status == config.Status.ValueString())
	})
	if err != nil {
		addAPIError(&resp.Diagnostics, "Listing tasks", err, nil)
		return
	}
	config.Tasks = make([]taskModel, 0, len(tasks))
	ids := make([]string, 0, len(tasks))
	for i := range tasks {
		model, diags := taskFromAPI(ctx, &tasks[i], nil, "")
		resp.Diagnostics.Append(diags...)
		config.Tasks = append(config.Tasks, model)
		ids = append(ids, tasks[i].ID)
	}
	list, diags := types.ListValueFrom(ctx, types.StringType, ids)
	resp.Diagnostics.Append(diags...)
	config.IDs = list
	resp.Diagnostics.Append(resp.State.Set(ctx, &config)...)
}
