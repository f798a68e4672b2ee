from django.urls import path

from apps.analysis import apis, views

app_name = "analysis"

_RUN = "protocols/<str:code>/v/<str:label>/analysis/<int:number>/"

urlpatterns = [
    path("protocols/<str:code>/v/<str:label>/analysis/", views.run_list, name="runs"),
    path(
        "protocols/<str:code>/v/<str:label>/analysis/latest/",
        views.latest_report,
        name="latest",
    ),
    path(_RUN, views.run_report, name="report"),
    path(f"{_RUN}status/", views.run_status, name="status"),
    path(f"{_RUN}result.json", views.result_download, name="result"),
    path(f"{_RUN}tidy.csv", views.tidy_download, name="tidy"),
    path(f"{_RUN}plots/<int:index>.svg", views.plot_svg, name="plot"),
]

_API = "protocols/<str:code>/versions/<str:label>/analysis-runs"

api_urlpatterns = [
    path(_API, apis.AnalysisRunStartApi.as_view(), name="run-start"),
    path(f"{_API}/<int:number>", apis.AnalysisRunDetailApi.as_view(), name="run-detail"),
    path(f"{_API}/<int:number>/result", apis.AnalysisRunResultApi.as_view(), name="run-result"),
]
