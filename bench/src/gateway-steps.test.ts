import { describe, expect, it } from "vitest";
import { parsePrometheusText, stepsBetween } from "./gateway-steps.ts";

const exposition = (scale: number) => `# HELP subdata_http_request_duration_seconds Time to answer
# TYPE subdata_http_request_duration_seconds histogram
subdata_http_request_duration_seconds_bucket{le="0.1",method="GET",route="/v1/subscriptions",component="gateway"} ${10 * scale}
subdata_http_request_duration_seconds_sum{method="GET",route="/v1/subscriptions",component="gateway"} ${0.6 * scale}
subdata_http_request_duration_seconds_count{method="GET",route="/v1/subscriptions",component="gateway"} ${10 * scale}
subdata_http_request_duration_seconds_sum{method="GET",route="/livez",component="gateway"} 0.001
subdata_http_request_duration_seconds_count{method="GET",route="/livez",component="gateway"} 1
subdata_gateway_upstream_queue_seconds_sum{upstream="query",component="gateway"} ${0.4 * scale}
subdata_gateway_upstream_queue_seconds_count{upstream="query",component="gateway"} ${10 * scale}
subdata_rpc_client_duration_seconds_sum{component="gateway",rpc_service="subdata.subscription.v1.SubscriptionService",rpc_method="ListSubscriptions"} ${0.15 * scale}
subdata_rpc_client_duration_seconds_count{component="gateway",rpc_service="subdata.subscription.v1.SubscriptionService",rpc_method="ListSubscriptions"} ${10 * scale}
subdata_rpc_client_duration_seconds_sum{component="gateway",rpc_service="subdata.audit.v1.AuditService",rpc_method="RecordReads"} ${9 * scale}
subdata_rpc_client_duration_seconds_count{component="gateway",rpc_service="subdata.audit.v1.AuditService",rpc_method="RecordReads"} ${2 * scale}
subdata_gateway_audit_wait_seconds_sum{component="gateway"} ${0.05 * scale}
subdata_gateway_audit_wait_seconds_count{component="gateway"} ${10 * scale}
subdata_gateway_audit_batch_reads_sum{outcome="ok",component="gateway"} ${10 * scale}
subdata_gateway_audit_batch_reads_count{outcome="ok",component="gateway"} ${2 * scale}
nodejs_heap_size_total_bytes{component="gateway"} 1.5e+7
`;

describe("gateway steps from Prometheus text", () => {
  it("parses names, labels (escaped quotes included) and values", () => {
    const samples = parsePrometheusText('# HELP x y\nsome_total{a="1",b="say \\"hi\\""} 3\nbare 2.5e+1\n\n');
    expect(samples).toEqual([
      { name: "some_total", labels: { a: "1", b: 'say "hi"' }, value: 3 },
      { name: "bare", labels: {}, value: 25 },
    ]);
  });

  it("gives the means of each step between two scrapes, the query's calls apart from the audit's", () => {
    const steps = stepsBetween(parsePrometheusText(exposition(1)), parsePrometheusText(exposition(3)));
    // 20 more list requests (the probe's one request is in both scrapes).
    expect(steps.requests).toBe(20);
    expect(steps.requestMs).toBeCloseTo(60);
    expect(steps.queryQueueMs).toBeCloseTo(40);
    expect(steps.queryCallMs).toBeCloseTo(15);
    expect(steps.auditWaitMs).toBeCloseTo(5);
    expect(steps.readsPerAuditCall).toBeCloseTo(5);
  });

  it("answers NaN for a step nothing went through", () => {
    const same = parsePrometheusText(exposition(1));
    expect(stepsBetween(same, same).queryCallMs).toBeNaN();
  });
});
