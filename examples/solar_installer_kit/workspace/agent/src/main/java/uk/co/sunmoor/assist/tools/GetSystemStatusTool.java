package uk.co.sunmoor.assist.tools;

import org.springframework.ai.tool.annotation.Tool;
import org.springframework.ai.tool.annotation.ToolParam;
import org.springframework.stereotype.Component;

import uk.co.sunmoor.assist.client.MonitoringClient;
import uk.co.sunmoor.assist.client.dto.SystemStatus;

/**
 * Reads the live status of an installed system from the monitoring platform (POST /api/v1/sites/status).
 */
@Component
public class GetSystemStatusTool {

    private final MonitoringClient monitoring;

    public GetSystemStatusTool(MonitoringClient monitoring) {
        this.monitoring = monitoring;
    }

    @Tool(name = "get_system_status",
          description = "Get the current status of a customer's installed system: online/offline, last data time, "
                  + "today's generation, battery charge and any active inverter or battery alarms.")
    public SystemStatus getSystemStatus(
            @ToolParam(description = "Sunmoor site ID from the customer's order or app, format SM-###### (e.g. SM-204187)") String siteId) {
        return monitoring.status(siteId);
    }
}
